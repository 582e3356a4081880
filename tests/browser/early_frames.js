// The frames of an early answer (POST /bridge/early) for a test page's recorder, filled into pages
// as {{EARLY_FRAMES}}: each frame as {kind, first} (its kind and its first byte), a text frame's
// envelope added through describe(envelope).
function earlyFrames(buffer, describe) {
  const bytes = new Uint8Array(buffer);
  const frames = [];
  for (let at = 0; at + 5 <= bytes.length; ) {
    const length = new DataView(buffer, at + 1, 4).getUint32(0);
    const frame = {kind: bytes[at], first: bytes[at + 5]};
    if (frame.kind === 1) Object.assign(frame, describe(JSON.parse(new TextDecoder().decode(bytes.subarray(at + 5, at + 5 + length)))));
    frames.push(frame);
    at += 5 + length;
  }
  return frames;
}

// Request bodies for uploads (fetch and XHR). A body source knows its length (or null when it
// streams) and yields chunks of at most `size` bytes.

import { isBufferSource, viewBytes } from "./bytes.js";

function bytesSource(bytes) {
  return {
    length: bytes.byteLength,
    async *chunks(size) {
      for (let offset = 0; offset < bytes.byteLength; offset += size) {
        yield bytes.subarray(offset, Math.min(offset + size, bytes.byteLength));
      }
    },
  };
}

export function blobSource(blob) {
  return {
    length: blob.size,
    async *chunks(size) {
      for (let offset = 0; offset < blob.size; offset += size) {
        const part = blob.slice(offset, Math.min(offset + size, blob.size));
        yield new Uint8Array(await part.arrayBuffer());
      }
    },
  };
}

export function streamSource(stream) {
  return {
    length: null,
    async *chunks(size) {
      const reader = stream.getReader();
      let finished = false;
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) {
            finished = true;
            return;
          }
          if (!isBufferSource(value)) throw new TypeError("a request body stream must yield Uint8Array chunks");
          const bytes = viewBytes(value);
          for (let offset = 0; offset < bytes.byteLength; offset += size) {
            yield bytes.subarray(offset, Math.min(offset + size, bytes.byteLength));
          }
        }
      } finally {
        if (!finished) reader.cancel().catch(() => {});
      }
    },
  };
}

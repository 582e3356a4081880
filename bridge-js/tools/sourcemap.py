"""Source maps, version 3 (https://tc39.es/ecma426/): Base64 VLQ, building, decoding and look-ups."""

import json

_BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_BASE64_VALUES = {ch: index for index, ch in enumerate(_BASE64)}


def encode_vlq(value):
    """One signed integer as Base64 VLQ: sign in the lowest bit, 5 bits a digit, bit 6 = more follow."""
    number = (-value << 1) | 1 if value < 0 else value << 1
    out = ""
    while True:
        digit = number & 31
        number >>= 5
        if number:
            digit |= 32
        out += _BASE64[digit]
        if not number:
            return out


def decode_vlq(text):
    """Every integer in a Base64 VLQ string."""
    values, number, shift = [], 0, 0
    for ch in text:
        digit = _BASE64_VALUES[ch]
        number |= (digit & 31) << shift
        if digit & 32:
            shift += 5
            continue
        values.append(-(number >> 1) if number & 1 else number >> 1)
        number, shift = 0, 0
    if shift:
        raise ValueError("truncated VLQ")
    return values


class SourceMapBuilder:
    """Collects segments (generated line/column -> source/line/column) in generated order."""

    def __init__(self):
        self.lines = [[]]

    def new_line(self):
        self.lines.append([])

    def add(self, generated_column, source, line, column):
        self.lines[-1].append((generated_column, source, line, column))

    def mappings(self):
        previous_source = previous_line = previous_column = 0
        encoded_lines = []
        for segments in self.lines:
            previous_generated = 0
            encoded = []
            for generated, source, line, column in segments:
                encoded.append(
                    encode_vlq(generated - previous_generated)
                    + encode_vlq(source - previous_source)
                    + encode_vlq(line - previous_line)
                    + encode_vlq(column - previous_column)
                )
                previous_generated, previous_source, previous_line, previous_column = generated, source, line, column
            encoded_lines.append(",".join(encoded))
        return ";".join(encoded_lines)

    def to_json(self, file, sources, contents):
        document = {
            "version": 3,
            "file": file,
            "sources": sources,
            "sourcesContent": contents,
            "names": [],
            "mappings": self.mappings(),
        }
        return json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n"


def decode_mappings(mappings):
    """The segments of a `mappings` string: per generated line, [generated_column, source, line, column]
    with absolute values (one-field segments, which map to nothing, are kept as [generated_column])."""
    lines = []
    source = line = column = 0
    for text in mappings.split(";"):
        generated = 0
        segments = []
        for piece in filter(None, text.split(",")):
            fields = decode_vlq(piece)
            generated += fields[0]
            if len(fields) >= 4:
                source += fields[1]
                line += fields[2]
                column += fields[3]
                segments.append([generated, source, line, column])
            else:
                segments.append([generated])
        lines.append(segments)
    return lines


def original_position(source_map, line, column):
    """Where 0-based (line, column) of the generated file comes from, as DevTools resolves it: the
    last segment on that line that starts at or before the column. None when nothing maps there."""
    lines = source_map["_decoded"] if "_decoded" in source_map else decode_mappings(source_map["mappings"])
    if line >= len(lines):
        return None
    best = None
    for segment in lines[line]:
        if segment[0] > column:
            break
        best = segment
    if best is None or len(best) < 4:
        return None
    return {"source": source_map["sources"][best[1]], "line": best[2], "column": best[3]}

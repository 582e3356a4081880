#!/usr/bin/env python3
"""Builds bridge-js/bridge.js (and bridge.js.map, and bridge.js.gz) from the ES modules in bridge-js/src/.

    python3 bridge-js/tools/build.py            # write bridge.js, bridge.js.map and bridge.js.gz
    python3 bridge-js/tools/build.py --check    # exit 1 if they differ from what src/ gives
    python3 bridge-js/tools/build.py --joined out.js   # also write the joined, unminified file

Python's standard library only: a fresh Debian machine has python3 (the Swift toolchain's own
dependencies pull it in, and scripts/install-deps.sh installs it otherwise), node is not there
before the tests' dependencies are installed, and npm is unreachable.

How the modules are joined ("scope hoisting", as Rollup and esbuild do): every module's top-level
declarations go into the one function scope of a classic-script IIFE, in dependency order, with
the `import` statements and `export` keywords removed. That is only correct under rules this
script checks, and fails the build on:
- a top-level name declared by two modules (they would collide in the shared scope);
- `import` of a name the other module does not export, an unused import, a renamed import
  (`as`), a default or namespace import, or a cycle between modules;
- a use of another module's export without importing it (the sources must load as real ES
  modules too; this check is lexical, so a local variable named like another module's export
  counts as a use: rename it);
- top-level statements other than declarations in any module but the entry (`src/main.js`): only
  the entry runs code when the file loads, so its double-include guard runs before anything.
The output is minified by removing comments and whitespace (jstokens.py: a real tokenizer, and
the result is re-tokenized and compared), with a version 3 source map back to `src/*.js`
(sources embedded). Identifiers are not mangled. The build is deterministic: same sources, same
bytes. bridge.js.gz is bridge.js gzipped (level 9, no name, time 0: deterministic too), which the
broker serves to a request that accepts gzip after checking that its CRC-32 and length are those of
bridge.js (Python's standard library has no Brotli).

The same run builds the bootstrap snippet (bridge-js/README.md, "The bootstrap snippet"): it
minifies snippet/snippet.js into bridge-snippet.js, the exact text of the page's inline script (no
line break at its end, so its SHA-256 is the one a Content-Security-Policy lists), and writes
bridge-snippet.html, the tag to copy with that hash in a comment.
"""

import argparse
import base64
import gzip
import hashlib
import json
import os
import sys
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jstokens  # noqa: E402
from jstokens import NUMBER, PUNCT, STRING, TEMPLATE, WORD, Token  # noqa: E402
from sourcemap import SourceMapBuilder  # noqa: E402

SHIM_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENTRY = "main.js"
OUTPUT = "bridge.js"
MAP = "bridge.js.map"
GZIP = "bridge.js.gz"
# The boot script (src/boot.js): a second entry, joined from the same modules into its own file.
BOOT_ENTRY = "boot.js"
BOOT_OUTPUT = "bridge-boot.js"
BOOT_MAP = "bridge-boot.js.map"
ENTRIES = (ENTRY, BOOT_ENTRY)
SNIPPET_SOURCE = os.path.join("snippet", "snippet.js")
SNIPPET = "bridge-snippet.js"
SNIPPET_TAG = "bridge-snippet.html"

# The classic-script wrapper. `this` is the global object for a <script>, undefined when the file is
# imported as a module; src/env.js picks globalThis first either way.
PROLOGUE = '(function(){"use strict";'
EPILOGUE = "}).call(this);"

DECLARATION_WORDS = {"function", "async", "class", "const", "let", "var"}


class BuildError(Exception):
    """A source breaks one of the rules above."""


@dataclass
class Module:
    name: str                                   # "client.js"
    source: str
    tokens: list
    imports: dict = field(default_factory=dict)  # module name -> [names]
    exports: set = field(default_factory=set)
    declared: dict = field(default_factory=dict)  # top-level name -> token
    dropped: set = field(default_factory=set)     # token indexes left out of the output

    @property
    def path(self):
        return f"src/{self.name}"

    def fail(self, token, message):
        raise BuildError(f"bridge-js/{self.path}:{token.line + 1}:{token.column + 1}: {message}")


# ------------------------------------------------------------------------------------ parsing

def depth_change(token):
    """+1 for an opening bracket (or a template's `${`), -1 for a closing one."""
    if token.kind == PUNCT:
        if token.text in "([{":
            return 1
        if token.text in ")]}":
            return -1
        return 0
    if token.kind == TEMPLATE:
        return (1 if token.text.endswith("${") else 0) - (1 if token.text.startswith("}") else 0)
    return 0


def statement_end(module, start):
    """Index of the last token of the top-level statement that starts at `start`."""
    tokens = module.tokens
    first = tokens[start]
    index = start
    if first.text == "export":
        index += 1
    is_block_declaration = tokens[index].text in ("function", "class") or (
        tokens[index].text == "async" and index + 1 < len(tokens) and tokens[index + 1].text == "function"
    )
    depth = 0
    for position in range(start, len(tokens)):
        token = tokens[position]
        depth += depth_change(token)
        if depth == 0:
            if token.kind == PUNCT and token.text == ";":
                return position
            if is_block_declaration and token.kind == PUNCT and token.text == "}":
                return position
    module.fail(first, "this top-level statement does not end (a missing semicolon?)")


def declared_names(module, start, end):
    """The names a top-level declaration statement binds (no destructuring at the top level)."""
    tokens = module.tokens
    index = start + 1 if tokens[start].text == "export" else start
    word = tokens[index].text
    if word == "async":
        index += 1
        word = tokens[index].text
    if word in ("function", "class"):
        index += 1
        if tokens[index].text == "*":
            index += 1
        return [tokens[index]]
    names = []
    expect_name = True
    depth = 0
    for position in range(index + 1, end + 1):
        token = tokens[position]
        if depth == 0 and expect_name:
            if token.kind != WORD:
                module.fail(token, "top-level destructuring is not supported by the build; declare names one by one")
            names.append(token)
            expect_name = False
        depth += depth_change(token)
        if depth == 0 and token.kind == PUNCT and token.text == ",":
            expect_name = True
    return names


def parse_import(module, start, end):
    tokens = module.tokens[start:end + 1]
    texts = [token.text for token in tokens]
    if len(texts) < 6 or texts[1] != "{" or texts[-3] != "from" or tokens[-2].kind != STRING or texts[-1] != ";":
        module.fail(tokens[0], 'only `import { a, b } from "./file.js";` is supported')
    specifier = json.loads(tokens[-2].text) if tokens[-2].text.startswith('"') else tokens[-2].text[1:-1]
    if not specifier.startswith("./") or "/" in specifier[2:] or not specifier.endswith(".js"):
        module.fail(tokens[-2], f"import from a sibling module (./name.js), not {specifier!r}")
    names = []
    for token in tokens[2:-4]:
        if token.text == ",":
            continue
        if token.kind != WORD or token.text in ("as", "default", "*"):
            module.fail(token, "renamed, default and namespace imports are not supported: import names as they are")
        names.append(token.text)
    if not names:
        module.fail(tokens[0], "an import with no names")
    target = specifier[2:]
    module.imports.setdefault(target, []).extend(names)


def parse_module(name, source):
    module = Module(name, source, jstokens.tokenize(source, f"bridge-js/src/{name}"))
    tokens = module.tokens
    index = 0
    while index < len(tokens):
        token = tokens[index]
        end = statement_end(module, index)
        if token.kind == WORD and token.text == "import":
            parse_import(module, index, end)
            module.dropped.update(range(index, end + 1))
        elif token.kind == WORD and token.text == "export" and tokens[index + 1].text == "{":
            for item in tokens[index + 2:end - 1]:
                if item.text == ",":
                    continue
                if item.kind != WORD or item.text == "as":
                    module.fail(item, "only `export { a, b };` is supported")
                module.exports.add(item.text)
            module.dropped.update(range(index, end + 1))
        else:
            is_export = token.kind == WORD and token.text == "export"
            head = tokens[index + 1] if is_export else token
            if head.kind == WORD and head.text in DECLARATION_WORDS:
                for name_token in declared_names(module, index, end):
                    if name_token.text in module.declared:
                        module.fail(name_token, f"{name_token.text} is declared twice")
                    module.declared[name_token.text] = name_token
                    if is_export:
                        module.exports.add(name_token.text)
                if is_export:
                    module.dropped.add(index)
            elif is_export:
                module.fail(head, "`export default` and re-exports are not supported")
            elif name not in ENTRIES:
                module.fail(token, "only src/main.js may run code when it loads (and src/boot.js, the boot script's entry); other modules only declare")
        index = end + 1
    for name_token in module.exports:
        if name_token not in module.declared:
            raise BuildError(f"bridge-js/{module.path}: exports {name_token}, which it does not declare")
    return module


def references(module):
    """Identifier tokens of the module's own code that may refer to a top-level binding: not after
    a dot, and not a property name in `{ key: value }` (a shorthand `{ key }` does refer)."""
    tokens = module.tokens
    found = {}
    for index, token in enumerate(tokens):
        if token.kind != WORD or index in module.dropped:
            continue
        if index > 0 and tokens[index - 1].text in (".", "?."):
            continue
        following = tokens[index + 1].text if index + 1 < len(tokens) else ""
        preceding = tokens[index - 1].text if index > 0 else ""
        if following == ":" and preceding in ("{", ","):
            continue  # an object key (a label or a `case` value never follows `{` or `,` like this)
        if following == "(" and is_definition(tokens, index + 1):
            continue  # `name(...) {`: a method (or a function's own name), not a use
        found.setdefault(token.text, token)
    return found


def is_definition(tokens, open_paren):
    """Whether the parenthesis at `open_paren` closes right before a `{` (parameters, not arguments)."""
    depth = 0
    for index in range(open_paren, len(tokens)):
        depth += depth_change(tokens[index])
        if depth == 0:
            return index + 1 < len(tokens) and tokens[index + 1].text == "{"
    return False


# ------------------------------------------------------------------------------------ linking

def load_modules(src_dir):
    modules = {}
    for name in sorted(os.listdir(src_dir)):
        if name.endswith(".js"):
            with open(os.path.join(src_dir, name), encoding="utf-8") as handle:
                modules[name] = parse_module(name, handle.read())
    if ENTRY not in modules:
        raise BuildError(f"bridge-js/src/{ENTRY} is missing")
    return modules


def link(modules, entry=ENTRY):
    """The modules `entry` joins, in dependency order (each after what it imports), after checking
    every rule for all of them."""
    owners = {}
    for module in modules.values():
        for name, token in module.declared.items():
            if name in owners:
                module.fail(token, f"{name} is also declared at the top level of src/{owners[name]}: one shared scope")
            owners[name] = module.name
    exported_by = {name for module in modules.values() for name in module.exports}
    for module in modules.values():
        used = references(module)
        imported = set()
        for target, names in module.imports.items():
            if target not in modules:
                raise BuildError(f"bridge-js/{module.path}: imports ./{target}, which does not exist")
            for name in names:
                if name not in modules[target].exports:
                    raise BuildError(f"bridge-js/{module.path}: imports {name} from ./{target}, which does not export it")
                if name in imported:
                    raise BuildError(f"bridge-js/{module.path}: imports {name} twice")
                if name not in used:
                    raise BuildError(f"bridge-js/{module.path}: imports {name} from ./{target} and never uses it")
                imported.add(name)
        for name, token in used.items():
            owner = owners.get(name)
            if owner and owner != module.name and name not in imported:
                hint = "" if name in exported_by else " (export it there)"
                module.fail(token, f"uses {name} without importing it from ./{owner}{hint}")
    def dependency_order(starts):
        """The modules `starts` import, directly or not, and themselves, each after what it imports."""
        order, state = [], {}

        def visit(name, path):
            if state.get(name) == "done":
                return
            if state.get(name) == "visiting":
                cycle = path[path.index(name):] + [name]
                raise BuildError("circular imports: " + " -> ".join(cycle))
            state[name] = "visiting"
            for target in modules[name].imports:
                visit(target, path + [name])
            state[name] = "done"
            order.append(modules[name])

        for start in starts:
            visit(start, [])
        return order

    reached = dependency_order([name for name in ENTRIES if name in modules])
    unused = sorted(set(modules) - {module.name for module in reached})
    if unused:
        raise BuildError(f"modules nothing imports: {', '.join(unused)}")
    return dependency_order([entry])


# ------------------------------------------------------------------------------------ emitting

def banner(version, output=OUTPUT, map_name=MAP):
    name = f"{output} {version}" if version else output
    what = "the boot script of the Bridge Broker page shim" if output == BOOT_OUTPUT else "the Bridge Broker page shim"
    return (f"/* {name}, {what}: built from bridge-js/src/*.js by "
            f"bridge-js/tools/build.py; do not edit. Readable sources in {map_name}. */\n")


def shim_version(modules):
    """The value of a top-level `VERSION = "..."` constant, for the banner."""
    for module in modules:
        token = module.declared.get("VERSION")
        if token is not None:
            index = module.tokens.index(token)
            value = module.tokens[index + 2]
            if value.kind == STRING:
                return json.loads(value.text)
    return None


def build(src_dir=None, entry=ENTRY, output=OUTPUT, map_name=MAP):
    """(minified text, source map text, joined text) of `entry` for the sources in `src_dir`."""
    src_dir = src_dir or os.path.join(SHIM_DIR, "src")
    order = link(load_modules(src_dir), entry)
    wrapper = jstokens.tokenize(PROLOGUE + EPILOGUE, "wrapper")
    prologue_length = sum(1 for token in wrapper if token.offset < len(PROLOGUE))
    stream = [(token, None) for token in wrapper[:prologue_length]]
    for source_index, module in enumerate(order):
        first = True
        for index, token in enumerate(module.tokens):
            if index in module.dropped:
                continue
            if first:
                # A module boundary is a line break: the previous module's last statement ended there.
                token = Token(token.kind, token.text, token.offset, token.line, token.column, True)
                first = False
            stream.append((token, source_index))
    epilogue = wrapper[prologue_length:]
    epilogue[0].newline_before = True
    stream += [(token, None) for token in epilogue]

    head = banner(shim_version(order), output, map_name)
    pieces = [head]
    line = head.count("\n")
    column = 0
    sourcemap = SourceMapBuilder()
    for _ in range(line):
        sourcemap.new_line()
    previous = None
    for token, source_index in stream:
        gap = jstokens.separator(previous, token)
        previous = token
        if gap == "\n":
            sourcemap.new_line()
            line, column = line + 1, 0
        else:
            column += len(gap)
        if source_index is not None:
            sourcemap.add(column, source_index, token.line, token.column)
        pieces.append(gap + token.text)
        # Strings with line continuations and templates hold line breaks of their own.
        text = token.text
        breaks = text.count("\n") + text.count("\r") - text.count("\r\n") + text.count("\u2028") + text.count("\u2029")
        for _ in range(breaks):
            sourcemap.new_line()
        if breaks:
            line += breaks
            last = max(text.rfind(ch) for ch in "\n\r\u2028\u2029")
            column = jstokens.utf16_length(text[last + 1:])
        else:
            column += jstokens.utf16_length(text)
    pieces.append(f"\n//# sourceMappingURL={map_name}\n")
    minified = "".join(pieces)
    jstokens.verify_minified([token for token, _ in stream], minified, output)
    map_text = sourcemap.to_json(output, [module.path for module in order], [module.source for module in order])
    return minified, map_text, joined(order)


def joined(order):
    """The modules in one readable classic script (the same code as bridge.js, unminified)."""
    parts = ["// bridge.js joined without minifying, for debugging; built by bridge-js/tools/build.py.\n",
             "(function () {\n\"use strict\";\n"]
    for module in order:
        parts.append(f"\n// ---------------------------------------------------------------- {module.path}\n")
        cursor = 0
        text = module.source
        out = []
        for index in sorted(module.dropped):
            token = module.tokens[index]
            out.append(text[cursor:token.offset])
            cursor = token.offset + len(token.text)
            if token.text == "export" and index + 1 < len(module.tokens) and index + 1 not in module.dropped:
                cursor = module.tokens[index + 1].offset  # the space after `export`
        out.append(text[cursor:])
        parts.append("".join(out))
    parts.append("}).call(this);\n")
    return "".join(parts)


def snippet_hash(code):
    """The CSP source expression of an inline script whose text is `code`: 'sha256-BASE64'."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(code.encode("utf-8")).digest()).decode("ascii") + "'"


def build_snippet(shim_dir=None):
    """(the snippet's code, its tag to copy) from snippet/snippet.js: comments and whitespace gone,
    no line break at the end (a CSP hash covers the script's text exactly)."""
    path = os.path.join(shim_dir or SHIM_DIR, SNIPPET_SOURCE)
    with open(path, encoding="utf-8") as handle:
        source = handle.read()
    name = f"bridge-js/{SNIPPET_SOURCE}"
    code = jstokens.minify(source, name)
    jstokens.verify_minified(jstokens.tokenize(source, name), code, SNIPPET)
    if "</" in code:
        raise BuildError(f"{name}: the snippet must not contain '</' (it ends the inline <script>)")
    tag = (f"<!-- Bridge Broker's bootstrap snippet: put it in the <head> right before the shim's <script src=\".../bridge.js\">,\n"
           f"     with the broker's URL in data-broker-url and the shim's data-token if it has one (bridge-js/README.md, \"The bootstrap snippet\").\n"
           f"     A Content-Security-Policy lists it as script-src {snippet_hash(code)}\n"
           f"     Built from bridge-js/{SNIPPET_SOURCE} by bridge-js/tools/build.py; do not edit. -->\n"
           f'<script data-broker-url="http://127.0.0.1:8787">{code}</script>\n')
    return code, tag


def encoded(text):
    """The bytes of an output: text as UTF-8, bytes as they are."""
    return text if isinstance(text, bytes) else text.encode("utf-8")


def gzipped(text):
    """bridge.js gzipped, the same bytes for the same text (no file name, no time)."""
    return gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)


def write_if_changed(path, text):
    data = encoded(text)
    try:
        with open(path, "rb") as handle:
            if handle.read() == data:
                return False
    except FileNotFoundError:
        pass
    with open(path, "wb") as handle:
        handle.write(data)
    return True


def main(argv=None):
    parser = argparse.ArgumentParser(description="Build bridge-js/bridge.js and bridge.js.map from bridge-js/src/.")
    parser.add_argument("--check", action="store_true", help="fail if the built files are not up to date")
    parser.add_argument("--joined", metavar="FILE", help="also write the joined, unminified script to FILE")
    parser.add_argument("--out-dir", default=SHIM_DIR, help="where to write bridge.js and bridge.js.map (default: bridge-js/)")
    args = parser.parse_args(argv)
    try:
        minified, map_text, joined_text = build()
        boot, boot_map, _ = build(entry=BOOT_ENTRY, output=BOOT_OUTPUT, map_name=BOOT_MAP)  # src/boot.js is the project's
        snippet, snippet_tag = build_snippet()
    except (BuildError, jstokens.TokenizeError) as error:
        print(f"build.py: {error}", file=sys.stderr)
        return 2
    outputs = {os.path.join(args.out_dir, OUTPUT): minified, os.path.join(args.out_dir, MAP): map_text,
               os.path.join(args.out_dir, GZIP): gzipped(minified),
               os.path.join(args.out_dir, BOOT_OUTPUT): boot, os.path.join(args.out_dir, BOOT_MAP): boot_map,
               os.path.join(args.out_dir, SNIPPET): snippet, os.path.join(args.out_dir, SNIPPET_TAG): snippet_tag}
    if args.check:
        stale = []
        for path, text in outputs.items():
            try:
                with open(path, "rb") as handle:
                    current = handle.read()
            except FileNotFoundError:
                current = None
            if current != encoded(text):
                stale.append(os.path.relpath(path))
        if stale:
            print(f"build.py: {', '.join(stale)} out of date with bridge-js/src: run `make shim`", file=sys.stderr)
            return 1
        return 0
    for path, text in outputs.items():
        if write_if_changed(path, text):
            print(f"wrote {os.path.relpath(path)} ({len(encoded(text))} bytes)")
    if args.joined:
        write_if_changed(args.joined, joined_text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

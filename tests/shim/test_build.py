"""The shim's build (bridge-js/tools): tokenizer, minifier, module rules, source map, determinism,
and that the committed bridge-js/bridge.js is what bridge-js/src gives."""
import gzip
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHIM = ROOT / "bridge-js"
sys.path.insert(0, str(SHIM / "tools"))

import build  # noqa: E402
import jstokens  # noqa: E402
import sourcemap  # noqa: E402


def kinds(source):
    return [(token.kind, token.text) for token in jstokens.tokenize(source)]


def run_node(script):
    done = subprocess.run(["node", "-e", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


# ------------------------------------------------------------------------------ the tokenizer

@pytest.mark.parametrize(
    "source, slash_kinds",
    [
        ("a = b / c / d", ["punct", "punct"]),
        ("x = /re/g.test(y)", ["regex"]),
        ("if (a) /re/.test(b)", ["regex"]),
        ("while (a) /x/.exec(b)", ["regex"]),
        ("f(a) / 2", ["punct"]),
        ("[1][0] / 2", ["punct"]),
        ("a++ / 2", ["punct"]),
        ("return /x/", ["regex"]),
        ("typeof /x/", ["regex"]),
        ("x.return / 2", ["punct"]),
        ("x = {} / 2", ["punct"]),
        ("function f() {}\n/x/.test(y)", ["regex"]),
        ("x = a ? /b/ : /c/", ["regex", "regex"]),
        ("x = `${a}` / 2", ["punct"]),
        ("x = [/a/, /b/]", ["regex", "regex"]),
        ("x = this / 2", ["punct"]),
        ("x = 1 /2/ 3", ["punct", "punct"]),
    ],
)
def test_regex_or_division(source, slash_kinds):
    found = [kind for kind, text in kinds(source) if text.startswith("/")]
    assert found == slash_kinds


def test_regex_bodies_keep_slashes_quotes_and_brackets():
    tokens = kinds(r"""a = /[/'"`]+\/x/gi; b = /[\]/]/""")
    assert ("regex", r"""/[/'"`]+\/x/gi""") in tokens
    assert ("regex", r"/[\]/]/") in tokens


def test_template_literals_with_nested_substitutions():
    source = "x = `a${ `b${ {c: '}'}.c }` + /}/.source }d${ `${1}` }e`;"
    tokens = kinds(source)
    templates = [text for kind, text in tokens if kind == "template"]
    assert templates == ["`a${", "`b${", "}`", "}d${", "`${", "}`", "}e`"]
    assert ("string", "'}'") in tokens
    assert ("regex", "/}/") in tokens
    assert tokens[-1] == ("punct", ";")


def test_comment_like_text_in_strings_and_templates_is_kept():
    source = "a = \"// not\" + '/* nor */' + `// nor ${'/*'} this`; // a comment's 'quote\n/* and `this` */ b"
    assert jstokens.minify(source) == "a=\"// not\"+'/* nor */'+`// nor ${'/*'} this`;b"


def test_comments_and_whitespace_go():
    assert jstokens.minify("/* head */\nconst  a = 1 ; // end\n\tlet b=2;") == "const a=1;let b=2;"


@pytest.mark.parametrize(
    "source, expected",
    [
        ("return\nvalue", "return\nvalue"),          # ASI: `return;` then `value`
        ("a\n++b", "a\n++b"),                        # `a; ++b`, not `a++; b`
        ("a\n--b", "a\n--b"),
        ("x = y\n(z)", "x=y\n(z)"),                  # kept either way: the newline is harmless
        ("throw\nerror", "throw\nerror"),
        ("a = 1\nb = 2", "a=1\nb=2"),
        ("a = b\n.c", "a=b.c"),                      # a line break before `.` cannot end a statement
        ("f(a,\n b)", "f(a,b)"),
        ("a - -b; a + +b; a - --b; a+ ++b", "a- -b;a+ +b;a- --b;a+ ++b"),
        ("1 .toString(); 1.5.toFixed(); 0x1.x; 1e3.x", "1 .toString();1.5.toFixed();0x1.x;1e3.x"),
        ("x = /a/g instanceof RegExp", "x=/a/g instanceof RegExp"),
        ("a / /re/.source", "a/ /re/.source"),
        ("if (a < !b) c-- > d", "if(a< !b)c-- >d"),
        ("class A { #x = 1; static #y }", "class A{#x=1;static #y}"),
    ],
)
def test_minify_keeps_what_the_grammar_needs(source, expected):
    assert jstokens.minify(source) == expected


def test_minified_code_computes_the_same_values():
    """Each snippet runs in node as written and minified; the results must agree."""
    snippets = [
        "function f() { return\n 42 }\nout = f();",
        "let a = 1, b = 2\na\n++b\nout = [a, b];",
        "let i = 5\ni\n--\ni\nout = i;",
        "const g = () => 1\nconst z = g\n(2)\nout = z;",
        "let a = 3; out = [a - -1, a+ +1, a - - -1];",
        "out = 10 / 2 / 5 + /2/.source.length;",
        "let x = 4; out = x /2/ 1;",
        'out = "// x".length + \'/* y */\'.length + `${"//"}`.length;',
        "const c = 2; out = `a${`b${ {k: c}.k + `${c}` }`}c`;",
        "out = [1 .toString(), 1.5.toFixed(2), .5 + 1e3, 0x10, 1_000];",
        "out = /a/g instanceof RegExp;",
        "var arr = [1, 2]\n;[3].forEach((n) => arr.push(n))\nout = arr;",
        "let y = [[7]]\nlet w = y\n[0]\nout = w;",
        "class A { #x = 1; static s = 2; get() { return this.#x + A.s } }\nout = new A().get();",
        "out = (() => { try { throw new Error('e')\n} catch (e) { return e.message } })();",
        "function h() { return\n/x/.test('x') }\nout = [h(), (() => { return (\n1) })()];",
        "let s = 'a\\\nb'; out = s;",
        "let t = `line\nbreak`; out = t.length;",
        "out = \"é\".length + '\\u00e9'.length;",
        "let n = 0; for (const k of [1, 2, 3]) { if (k % 2) continue\n n += k } out = n;",
        "let q = 1; if (q) /x/.test('x') && (q = 2); out = q;",
        "out = typeof typeof 1;",
        "let m = 2; out = m-- > 1;",
    ]
    script = ["const results = [];"]
    for snippet in snippets:
        for code in (snippet, jstokens.minify(snippet)):
            script.append(f"results.push((() => {{ let out; {code}\n; return JSON.stringify([out]); }})());")
    script.append("console.log(JSON.stringify(results));")
    results = json.loads(run_node("\n".join(script)))
    for index, snippet in enumerate(snippets):
        assert results[2 * index] == results[2 * index + 1], snippet
        assert results[2 * index] is not None, snippet


def test_verify_minified_catches_fused_tokens():
    with pytest.raises(jstokens.TokenizeError):
        jstokens.verify_minified(jstokens.tokenize("a - -b"), "a--b")
    with pytest.raises(jstokens.TokenizeError):
        jstokens.verify_minified(jstokens.tokenize("x = /re/ in y"), "x=/re/in y")


@pytest.mark.parametrize("source", ["a = 'open", "a = `open ${b}", "a = /open", "/* open", "f(a", "a)"])
def test_broken_source_is_an_error(source):
    with pytest.raises(jstokens.TokenizeError):
        jstokens.tokenize(source)


# ------------------------------------------------------------------------------ module rules

def write_modules(directory, files):
    directory.mkdir()
    for name, text in files.items():
        (directory / name).write_text(text)
    return directory


GOOD = {
    "a.js": "export const A = 1;\nexport function double(x) { return x * 2; }\n",
    "main.js": 'import { A, double } from "./a.js";\nglobalThis.out = double(A);\n',
}


def test_a_valid_set_of_modules_builds_and_runs(tmp_path):
    minified, map_text, joined = build.build(str(write_modules(tmp_path / "src", GOOD)))
    assert json.loads(run_node(minified.replace("}).call(this);", "}).call(this);console.log(globalThis.out);").split("\n//#")[0])) == 2
    assert json.loads(map_text)["sources"] == ["src/a.js", "src/main.js"]
    assert "import" not in minified and "export" not in minified
    assert "function double(x)" in joined


@pytest.mark.parametrize(
    "files, message",
    [
        ({"a.js": "export const A = 1;\n", "main.js": 'import { A } from "./a.js";\nconst A2 = A;\nconst A = 2;\n'},
         "also declared"),
        ({"a.js": "export const A = 1;\n", "main.js": "const x = A;\n"}, "without importing"),
        ({"a.js": "export const A = 1;\nconst HIDDEN = 2;\n", "main.js": 'import { A } from "./a.js";\nconst x = A + HIDDEN;\n'},
         "export it there"),
        ({"a.js": "export const A = 1;\nexport const B = 2;\n", "main.js": 'import { A, B } from "./a.js";\nA;\n'},
         "never uses"),
        ({"a.js": "const A = 1;\n", "main.js": 'import { A } from "./a.js";\nA;\n'}, "does not export"),
        ({"a.js": 'import { B } from "./b.js";\nexport const A = () => B;\n',
          "b.js": 'import { A } from "./a.js";\nexport const B = () => A;\n',
          "main.js": 'import { A } from "./a.js";\nA();\n'}, "circular"),
        ({"a.js": "export const A = 1;\nconsole.log(A);\n", "main.js": 'import { A } from "./a.js";\nA;\n'},
         "only src/main.js may run code"),
        ({"a.js": "export const A = 1;\n", "main.js": 'import { A as B } from "./a.js";\nB;\n'}, "renamed"),
        ({"a.js": "export default 1;\n", "main.js": "1;\n"}, "export default"),
        ({"a.js": "export const A = 1\nexport const B = 2\n", "main.js": 'import { A } from "./a.js";\nA;\n'},
         "semicolon"),
        ({"a.js": "export const A = 1;\n", "unused.js": "export const U = 1;\n", "main.js": 'import { A } from "./a.js";\nA;\n'},
         "nothing imports"),
    ],
)
def test_broken_module_rules_fail_the_build(tmp_path, files, message):
    with pytest.raises(build.BuildError, match=message):
        build.build(str(write_modules(tmp_path / "src", files)))


# ------------------------------------------------------------------------------ the real shim

@pytest.fixture(scope="module")
def built():
    minified, map_text, joined = build.build()
    return {"code": minified, "map": json.loads(map_text), "joined": joined}


def test_vlq_round_trip():
    for value in (0, 1, -1, 15, 16, -16, 31, 32, 1000000, -123456):
        assert sourcemap.decode_vlq(sourcemap.encode_vlq(value)) == [value]
    assert sourcemap.encode_vlq(16) == "gB"  # the spec's own example digits: 16 -> 32 -> "gB"
    assert sourcemap.decode_vlq("AAgBC") == [0, 0, 16, 1]


def generated_position(code, needle):
    index = code.index(needle)
    line = code.count("\n", 0, index)
    column = index - (code.rfind("\n", 0, index) + 1)
    return line, column


@pytest.mark.parametrize(
    "needle, source, source_line",
    [
        ("class BridgeError", "src/errors.js", "export class BridgeError extends Error {"),
        ("function encodeBodyFrame", "src/posts.js", "export function encodeBodyFrame(id, payload, end) {"),
        ('new TypeError("BridgeBroker.send', "src/api.js", 'throw new TypeError("BridgeBroker.send'),
        ("class WebKitTransport", "src/transport-webkit.js", "export class WebKitTransport {"),
        ("function start()", "src/main.js", "function start() {"),
    ],
)
def test_the_source_map_points_at_the_right_lines(built, needle, source, source_line):
    line, column = generated_position(built["code"], needle)
    found = sourcemap.original_position(built["map"], line, column)
    assert found is not None and found["source"] == source
    index = built["map"]["sources"].index(source)
    text = built["map"]["sourcesContent"][index].split("\n")[found["line"]]
    assert source_line in text
    assert text[found["column"]:].startswith(needle.split("(")[0].split(" ")[0])


def test_every_mapped_token_is_the_same_text_in_its_source(built):
    code_lines = built["code"].split("\n")
    contents = [text.split("\n") for text in built["map"]["sourcesContent"]]
    segments = 0
    for line, row in enumerate(sourcemap.decode_mappings(built["map"]["mappings"])):
        for generated, source, original_line, original_column in row:
            source_text = contents[source][original_line]
            token = re.match(r"[\w$#]+|\S", source_text[original_column:]).group(0)
            assert code_lines[line][generated:].startswith(token), (line, generated, token)
            segments += 1
    assert segments > 10000


def test_bridge_js_is_the_built_file_and_references_its_map(built):
    committed = (SHIM / "bridge.js").read_text()
    assert committed.endswith("\n//# sourceMappingURL=bridge.js.map\n")
    assert built["map"]["version"] == 3 and built["map"]["file"] == "bridge.js"
    assert all(source.startswith("src/") for source in built["map"]["sources"])


def test_the_committed_build_is_up_to_date():
    """bridge.js and bridge.js.map are committed: after any change under src/, run `make shim`."""
    done = subprocess.run([sys.executable, str(SHIM / "tools" / "build.py"), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_check_notices_a_stale_build(tmp_path):
    (tmp_path / "bridge.js").write_text((SHIM / "bridge.js").read_text() + "\n")
    (tmp_path / "bridge.js.map").write_text((SHIM / "bridge.js.map").read_text())
    done = subprocess.run([sys.executable, str(SHIM / "tools" / "build.py"), "--check", "--out-dir", str(tmp_path)],
                          capture_output=True, text=True)
    assert done.returncode == 1 and "make shim" in done.stderr


def test_check_notices_a_gzip_copy_that_is_not_bridge_js(tmp_path):
    for name in ("bridge.js", "bridge.js.map"):
        (tmp_path / name).write_bytes((SHIM / name).read_bytes())
    (tmp_path / "bridge.js.gz").write_bytes(gzip.compress((SHIM / "bridge.js").read_bytes() + b"\n", mtime=0))
    done = subprocess.run([sys.executable, str(SHIM / "tools" / "build.py"), "--check", "--out-dir", str(tmp_path)],
                          capture_output=True, text=True)
    assert done.returncode == 1 and "bridge.js.gz" in done.stderr


def test_the_gzip_copy_holds_the_committed_bridge_js():
    """The broker serves bridge.js.gz to a request that accepts gzip: it must be bridge.js, byte for
    byte, with no file name or time in its header (the same bytes from every build)."""
    data = (SHIM / "bridge.js.gz").read_bytes()
    assert gzip.decompress(data) == (SHIM / "bridge.js").read_bytes()
    assert data[:3] == b"\x1f\x8b\x08" and data[3] & 0x08 == 0, "no FNAME"
    assert data[4:8] == b"\0\0\0\0", "MTIME 0"
    assert len(data) < len((SHIM / "bridge.js").read_bytes()) / 3


def test_the_build_is_deterministic(tmp_path):
    outputs = []
    for seed in ("1", "2"):
        out = tmp_path / seed
        out.mkdir()
        env = dict(os.environ, PYTHONHASHSEED=seed)
        subprocess.run([sys.executable, str(SHIM / "tools" / "build.py"), "--out-dir", str(out), "--joined", str(out / "joined.js")],
                       check=True, env=env, capture_output=True)
        outputs.append([(out / name).read_bytes() for name in ("bridge.js", "bridge.js.map", "bridge.js.gz", "joined.js",
                                                               "bridge-boot.js", "bridge-boot.js.map")])
    assert outputs[0] == outputs[1]


def test_the_boot_script_is_its_entry_and_what_it_imports_only(tmp_path):
    """bridge-boot.js (src/boot.js): the same modules, joined from its own entry into a file of its
    own with its own map; none of the shim's modules it does not import (the socket, XHR, the
    loading bar), and far smaller than the shim, whose start at document start is what it avoids."""
    code = (SHIM / "bridge-boot.js").read_text()
    sources = json.loads((SHIM / "bridge-boot.js.map").read_text())["sources"]
    assert sources[-1] == "src/boot.js" and "src/main.js" not in sources
    for module in ("src/client.js", "src/xhr.js", "src/transport-websocket.js", "src/loading-bar.js", "src/fetch.js"):
        assert module not in sources, module
    assert code.startswith("/* bridge-boot.js ") and code.endswith("//# sourceMappingURL=bridge-boot.js.map\n")
    assert len(code.encode()) < len((SHIM / "bridge.js").read_bytes()) / 2
    path = tmp_path / "boot.js"
    path.write_text(code)
    subprocess.run(["node", "--check", str(path)], check=True)


def test_the_joined_file_is_valid_javascript(built, tmp_path):
    path = tmp_path / "joined.js"
    path.write_text(built["joined"])
    subprocess.run(["node", "--check", str(path)], check=True)


def test_the_snippet_is_its_source_minified_with_its_hash_in_the_tag(tmp_path):
    """bridge-snippet.js is the exact text of a page's inline script: the source's tokens, no line
    break at the end (a CSP hash covers the text byte for byte), valid JavaScript; the tag to copy
    holds the same text and names its hash."""
    code = (SHIM / "bridge-snippet.js").read_text()
    source = (SHIM / "snippet" / "snippet.js").read_text()
    assert [(t.kind, t.text) for t in jstokens.tokenize(code)] == [(t.kind, t.text) for t in jstokens.tokenize(source)]
    assert not code.endswith("\n") and "</" not in code and len(code.encode()) < 600
    tag = (SHIM / "bridge-snippet.html").read_text()
    assert f">{code}</script>" in tag and f"script-src {build.snippet_hash(code)}" in tag
    path = tmp_path / "snippet.js"
    path.write_text(code)
    subprocess.run(["node", "--check", str(path)], check=True)


def test_a_snippet_that_would_end_its_script_element_fails_the_build(tmp_path):
    (tmp_path / "snippet").mkdir()
    (tmp_path / "snippet" / "snippet.js").write_text('document.title = "</script>";\n')
    with pytest.raises(build.BuildError, match="must not contain '</'"):
        build.build_snippet(str(tmp_path))

#!/usr/bin/env python3
"""What making and reading a page's Responses costs its main thread, in headless Chromium.

    python3 scripts/bench_response.py [--rounds N] [--count 30] [--size 20000]

The boot script and the shim resolve a preloaded page's fetch() calls with Responses they make
from bytes (src/response.js); the page then reads each body. This makes `count` Responses of
`size` bytes each, cut from one buffer as an early answer's bodies are, with five headers, in a
fresh browser context per load (a new renderer: nothing warmed, as on a page's first load), and
times making them and reading every body with `arrayBuffer()` (all at once, as the page-load
bench's page does). Rows:

- `Response, Headers`: `new Response(bytes, {headers: new Headers(pairs)})`, the shim before
  2026-11-29's ninth session (whose own properties are left out here);
- `Response, pairs`: the same with the header pairs given to the constructor;
- `subclass`: a subclass of Response whose `arrayBuffer()` reads the bytes it was made from (what
  src/response.js does now), with its url/type/redirected getters;
- `null body`: `new Response(null, ...)`, what making the object alone costs.

Prints median [min-max] in ms of the rounds after a warm-up round.
"""
import argparse
import pathlib
import tempfile

import benchkit
from benchkit import BrowserContext, DevTools

PAGE = """<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><title>responses</title><script>
const params = new URLSearchParams(location.search);
const way = params.get("way"), count = Number(params.get("count")), size = Number(params.get("size"));
const answer = new Uint8Array(count * size + 15000);
for (let i = 0; i < answer.length; i += 97) answer[i] = i & 255;
const heads = [];
for (let i = 0; i < count; i++) {
  heads.push([["content-type", "application/octet-stream"], ["cache-control", "max-age=600"],
    ["date", "Sun, 29 Nov 2026 05:00:00 GMT"], ["content-length", String(size)], ["etag", '"e' + i + '"']]);
}
class Bridged extends Response {
  #state;
  constructor(body, init, state) { super(body, init); this.#state = state; }
  get url() { return #state in this ? this.#state.url : super.url; }
  get type() { return #state in this ? this.#state.type : super.type; }
  get redirected() { return #state in this ? this.#state.redirected : super.redirected; }
  get bodyUsed() { return (#state in this && this.#state.used) || super.bodyUsed; }
  arrayBuffer() {
    const state = this.#state;
    if (state.used || super.bodyUsed) return super.arrayBuffer();
    state.used = true;
    return Promise.resolve(state.bytes.slice().buffer);
  }
}
const made = [];
const started = performance.now();
for (let i = 0; i < count; i++) {
  const bytes = answer.subarray(i * size, (i + 1) * size);
  const init = { status: 200, statusText: "OK" };
  if (way === "headers") made.push(new Response(bytes, Object.assign(init, { headers: new Headers(heads[i]) })));
  else if (way === "pairs") made.push(new Response(bytes, Object.assign(init, { headers: heads[i] })));
  else if (way === "subclass") made.push(new Bridged(bytes, Object.assign(init, { headers: heads[i] }),
    { url: location.origin + "/r" + i, type: "basic", redirected: false, bytes, used: false }));
  else made.push(new Response(null, Object.assign(init, { headers: heads[i] })));
}
const madeMs = performance.now() - started;
Promise.all(made.map((response) => response.arrayBuffer())).then(() => {
  window.result = { make: madeMs, read: performance.now() - started - madeMs };
});
</script>"""

WAYS = {"Response, Headers": "headers", "Response, pairs": "pairs", "subclass": "subclass", "null body": "null"}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=9, help="counted rounds (default 9), after one warm-up round")
    parser.add_argument("--count", type=int, default=30, help="Responses per load (default 30, the page-load bench's)")
    parser.add_argument("--size", type=int, default=20000, help="bytes per body (default 20000)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        pathlib.Path(root, "index.html").write_text(PAGE)
        server = benchkit.static_server(root)
        driver = benchkit.chromium()
        devtools = DevTools(driver)
        figures = {name: {"make": [], "read": []} for name in WAYS}
        try:
            for round_ in range(args.rounds + 1):
                for name, way in WAYS.items():
                    context = BrowserContext(driver, devtools)
                    try:
                        driver.get(f"http://127.0.0.1:{server.server_port}/index.html?way={way}&count={args.count}"
                                   f"&size={args.size}&round={round_}")
                        result = benchkit.wait_for(driver, "window.result")
                    finally:
                        context.close()
                    if round_:
                        for key in ("make", "read"):
                            figures[name][key].append(result[key])
        finally:
            devtools.close()
            driver.quit()
            server.shutdown()
    print(f"{args.count} Responses of {args.size} bytes, a fresh browser context per load, {args.rounds} rounds; "
          f"{benchkit.machine_load()}\n")
    print("| way | make (ms) | read every body (ms) |\n|---|---|---|")
    for name, values in figures.items():
        print(f"| {name} | {benchkit.spread(values['make'], 2)} | {benchkit.spread(values['read'], 2)} |")


if __name__ == "__main__":
    main()

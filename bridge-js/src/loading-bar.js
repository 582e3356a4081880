// The optional loading bar (data-loading-bar), drawn from page progress.

import { global } from "./env.js";

const BAR_TRANSITION = "width 200ms ease-out, opacity 400ms ease-in";

/** A thin fixed bar at the top of the page that follows `progress` and fades out at 1. */
export function createLoadingBar(emitter, pageProgress, options) {
  const doc = global.document;
  if (!doc || typeof doc.createElement !== "function") return null;
  const bar = doc.createElement("div");
  bar.setAttribute("data-bridge-loading-bar", "");
  bar.setAttribute("aria-hidden", "true");
  Object.assign(bar.style, {
    position: "fixed",
    top: "0",
    left: "0",
    width: "0%",
    height: options.height || "3px",
    background: options.color || "#2f80ed",
    boxShadow: `0 0 6px ${options.color || "#2f80ed"}`,
    zIndex: "2147483647",
    pointerEvents: "none",
    opacity: "0",
    transition: BAR_TRANSITION,
  });
  (doc.body || doc.documentElement).appendChild(bar);
  let fadeTimer = null;
  let full = pageProgress.done;

  function render(event) {
    clearTimeout(fadeTimer);
    if (event.done) {
      bar.style.opacity = "1";
      bar.style.width = "100%";
      full = true;
      fadeTimer = setTimeout(() => {
        bar.style.opacity = "0";
      }, 250);
      return;
    }
    if (full) {
      // A new load: jump back to 0 instead of animating the bar backwards.
      full = false;
      bar.style.transition = "none";
      bar.style.width = "0%";
      void bar.offsetWidth;
      bar.style.transition = BAR_TRANSITION;
    }
    bar.style.opacity = "1";
    bar.style.width = `${(event.progress * 100).toFixed(2)}%`;
  }

  const unsubscribe = emitter.on("progress", render);
  if (!pageProgress.done) render({ progress: pageProgress.value, done: false });
  return {
    element: bar,
    remove() {
      unsubscribe();
      clearTimeout(fadeTimer);
      if (bar.parentNode) bar.parentNode.removeChild(bar);
    },
  };
}

// The patching rules: data-include and data-exclude patterns, matched against each request's URL.

import { isHttpUrl, pageOrigin } from "./urls.js";

export function parseList(value) {
  if (value === undefined || value === null || value === false) return [];
  if (Array.isArray(value)) return value.filter((item) => item !== "" && item != null);
  if (value instanceof RegExp) return [value];
  return String(value).split(/[\s,]+/).filter(Boolean);
}

function escapeRegExp(text) {
  return text.replace(/[.+?^${}()|[\]\\]/g, "\\$&");
}

/** A pattern is a URL prefix, or a glob over the whole URL when it has `*`; "/path" means this page's origin. */
function compilePattern(pattern) {
  if (pattern instanceof RegExp) return (href) => pattern.test(href);
  let text = String(pattern);
  if (text.startsWith("/") && !text.startsWith("//")) {
    const origin = pageOrigin();
    if (origin) text = origin + text;
  }
  if (text.includes("*")) {
    const regexp = new RegExp(`^${text.split("*").map(escapeRegExp).join(".*")}$`);
    return (href) => regexp.test(href);
  }
  return (href) => href.startsWith(text);
}

export class UrlRules {
  constructor(include, exclude) {
    this.include = parseList(include).map(compilePattern);
    this.exclude = parseList(exclude).map(compilePattern);
  }

  allows(href) {
    if (this.exclude.some((matches) => matches(href))) return false;
    return this.include.length === 0 || this.include.some((matches) => matches(href));
  }

  /**
   * Whether a request for the parsed `url` goes through the broker: an http(s) URL, not of the
   * broker's own origin (`brokerOrigin`, null when there is none), that the rules allow.
   */
  bridges(url, brokerOrigin) {
    return isHttpUrl(url) && url.origin !== brokerOrigin && this.allows(url.href);
  }
}

import { InvalidIdError } from "./errors.js";

export const API_PREFIX = "/api/v1";

/** `http://host:8000` or `http://host:8000/api/v1` → `http://host:8000/api/v1/`. */
export function apiBaseUrl(url: string): string {
  let base = url.trim().replace(/\/+$/, "");
  if (!base.endsWith(API_PREFIX)) base += API_PREFIX;
  return `${base}/`;
}

/**
 * A path relative to the API base with every part percent-encoded, so an id such as
 * `../../metrics` or `a/b?c#d` stays one segment of the path it was meant for. A part
 * that is exactly `.` or `..` is refused: URL parsing resolves those segments away
 * even when percent-encoded (`%2E%2E`), so no encoding can keep them in place.
 */
export function apiPath(...parts: (string | number)[]): string {
  return parts
    .map((part) => {
      const text = String(part);
      if (text === "." || text === "..") {
        throw new InvalidIdError(`'${text}' cannot be an id: it is not a path segment`, { code: "invalid_id" });
      }
      return encodeURIComponent(text);
    })
    .join("/");
}

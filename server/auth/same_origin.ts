/**
 * Cross-site request refusal for cookie-authenticated requests. A browser attaches the session
 * cookie to whatever a page makes it send (SameSite=Strict narrows that, but not for every
 * browser and sibling subdomain), so a request that changes state on the strength of a cookie
 * must prove it came from a page of this origin: `Sec-Fetch-Site: same-origin` from modern
 * browsers, else an `Origin` equal to our own. A request with neither is refused: every browser
 * that sends cookies sends one of them on a POST or a WebSocket upgrade.
 */

/** Whether the request could change state: anything but GET/HEAD/OPTIONS, and every upgrade. */
export function changesState(req: Request): boolean {
  const m = req.method.toUpperCase();
  if (m !== "GET" && m !== "HEAD" && m !== "OPTIONS") return true;
  return req.headers.get("upgrade") !== null;
}

/** This server's origin as the browser sees it. */
export function ownOrigin(req: Request, trustForwardedProto: boolean): string {
  const url = new URL(req.url);
  const forwarded = req.headers.get("x-forwarded-proto")?.split(",")[0].trim().toLowerCase();
  const scheme = trustForwardedProto && forwarded === "https" ? "https:" : url.protocol;
  return `${scheme}//${url.host}`;
}

/** Whether the request came over TLS (directly, or through a proxy we were told to trust). */
export function viaTls(req: Request, trustForwardedProto: boolean): boolean {
  return ownOrigin(req, trustForwardedProto).startsWith("https:");
}

/** Null when the request comes from a page of this origin, else why it is refused. */
export function crossOriginProblem(req: Request, trustForwardedProto: boolean): string | null {
  // The browser sets Sec-Fetch-Site itself (no page can), and it stays right behind a proxy
  // that rewrites Host, so it wins when present.
  const site = req.headers.get("sec-fetch-site");
  if (site !== null) return site === "same-origin" ? null : `Sec-Fetch-Site is "${site}"`;
  const origin = req.headers.get("origin");
  if (origin === null) return "it carries neither Origin nor Sec-Fetch-Site";
  const own = ownOrigin(req, trustForwardedProto);
  return origin === own ? null : `Origin "${origin}" is not "${own}"`;
}

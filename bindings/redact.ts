/**
 * Removing passwords from text that is about to be shown: error messages,
 * status and log lines. One function, `redact()`, for bindings/pg and the
 * CLI alike.
 *
 * Two layers, because either alone misses cases:
 *
 * - patterns, for text whose secret is not known: URLs
 *   (`scheme://user:pw@host`, `//user:pw@host`), scheme-less `user:pw@host`,
 *   `password=...` (keyword/value strings, URL query parameters), and a NATS
 *   URL's token (`nats://token@host`) and the query parameters that carry a
 *   token in sink URLs (`?token=`, `sig=`, `api_key=`...);
 * - known secrets (the password of the connection in use, PGPASSWORD),
 *   replaced wherever they appear — raw, percent-encoded or JSON-escaped —
 *   for the case where a library or server echoes the password in a form no
 *   pattern recognizes.
 *
 * It errs on the side of hiding too much: a URL's password runs to the last
 * `@` on its line, so that one with a raw `/`, `?`, `@` or space is still
 * removed whole.
 */

export const MASK = "***";

/**
 * Known secrets shorter than this are not searched for: replacing every "ab"
 * in a message would garble it, and a password that short is no secret to
 * protect. The patterns still remove short passwords from connection strings.
 */
const MIN_SECRET = 3;

// `//user:password@` with or without a scheme. The user may hold a raw `@`
// (the last `@` ends the password, as in WHATWG URLs); the password runs to
// the last `@` on the line.
const URL_USERINFO = /(\/\/[^\s:/]*):[^\n]*@/g;

// Scheme-less `user:password@host` at the start of a word. Not `scheme://`
// (the pattern above keeps its user) and no whitespace inside: "ERROR: x@y"
// is not a password.
const BARE_USERINFO = /(^|[\s"'(=,<\[])([^\s:/"'(),<>\[\]]+):(?!\/\/)[^\s]*@(?=[^\s@])/g;

// `password=value`, `password = 'quoted \' value'`, also PGPASSWORD=... and
// `?password=...&`: the value runs to whitespace (or its closing quote).
const KV_PASSWORD = /(password\s*=\s*)('(?:[^'\\]|\\[\s\S])*(?:'|$)|(?:[^\s\\]|\\[\s\S])+)/gi;

// A NATS URL's token: `nats://TOKEN@host` (no ':' — the whole userinfo is the secret).
const NATS_TOKEN = /\b((?:nats|tls|wss?):\/\/)[^\s:/@]+@/gi;

// Secrets that sink URLs carry in their query (a webhook's `?token=`, a
// signed URL's `sig=`, `X-Amz-Signature=`, an API's `api_key=` or `key=`,
// Azure Functions' `code=`): the value runs to the next `&`, `#` or space.
const QUERY_SECRET =
  /([?&](?:token|access_token|refresh_token|id_token|auth|authorization|api[-_]?key|key|secret|client_secret|sig|signature|code|pass|pwd|x-amz-signature|x-amz-credential|x-amz-security-token)=)[^&#\s]*/gi;

/** PGPASSWORD, where there is an environment to read it from. */
function envPassword(): string | undefined {
  try {
    const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
    return env?.PGPASSWORD;
  } catch {
    return undefined; // e.g. Deno without --allow-env
  }
}

/** The forms a secret may take in a message. */
function variants(secret: string): string[] {
  const forms = new Set([secret, encodeURIComponent(secret), encodeURI(secret), JSON.stringify(secret).slice(1, -1)]);
  return [...forms];
}

/**
 * `text` without passwords: those matching the patterns above, `secrets`
 * (e.g. from `connectionSecrets()`) and PGPASSWORD.
 */
export function redact(text: string, secrets: Iterable<string | undefined> = []): string {
  let out = text;
  const known = new Set<string>();
  for (const s of [...secrets, envPassword()]) {
    if (typeof s === "string" && s.length >= MIN_SECRET) for (const v of variants(s)) known.add(v);
  }
  // Known secrets first, while they are whole (a pattern may cut one at a
  // space or an '@'); longest first, so one containing another goes whole.
  for (const s of [...known].sort((a, b) => b.length - a.length)) {
    if (out.includes(s)) out = out.split(s).join(MASK);
  }
  return out
    .replace(URL_USERINFO, `$1:${MASK}@`)
    .replace(BARE_USERINFO, `$1$2:${MASK}@`)
    .replace(KV_PASSWORD, `$1${MASK}`)
    .replace(NATS_TOKEN, `$1${MASK}@`)
    .replace(QUERY_SECRET, `$1${MASK}`);
}

function decode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/**
 * The passwords a connection string holds, in every form it might be
 * echoed: found by pattern, so also in strings that do not parse. For
 * `redact()`'s `secrets`.
 */
export function connectionSecrets(connection: string): string[] {
  const found: string[] = [];
  const line = connection.split("\n")[0]!;
  // A URL or `//` form: from the first ':' after the user to the last '@'.
  const url = /\/\/[^\s:/]*:(.*)@/.exec(line);
  if (url) found.push(url[1]!);
  else {
    // Scheme-less user:password@host: the whole string is one connection string here, so spaces count too.
    const bare = /^\s*[^\s:/=]+:(.*)@/.exec(line);
    if (bare && !bare[1]!.startsWith("//")) found.push(bare[1]!);
  }
  for (const m of connection.matchAll(new RegExp(KV_PASSWORD.source, "gi"))) {
    const v = m[2]!;
    found.push(v);
    const quoted = v.startsWith("'");
    const body = quoted ? v.slice(1, v.endsWith("'") && v.length > 1 ? -1 : undefined) : v;
    found.push(body.replace(/\\([\s\S])/g, "$1"));
    // In a URL query the value ends at '&'.
    found.push(v.split("&")[0]!);
  }
  const all = new Set<string>();
  for (const f of found) {
    if (f.length === 0) continue;
    all.add(f);
    all.add(decode(f));
  }
  return [...all];
}

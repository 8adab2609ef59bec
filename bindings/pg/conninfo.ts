/**
 * Connection strings, parsed here into a `pg` ClientConfig instead of being
 * handed to `pg` (whose parser knows only URLs, and whose errors may carry
 * the string): libpq's two forms,
 *
 *   postgres://user:password@host:5432/dbname?sslmode=require
 *   host=localhost port=5432 dbname=app user=u password='p w\'x'
 *
 * Keyword/value values are bare words or single-quoted, with backslash
 * escapes in both; whitespace around `=` is allowed. A URL's parts are
 * percent-decoded; its query parameters are keywords as well
 * (`?host=/var/run/postgresql`). The userinfo ends at the last `@` before
 * the host, so a raw `@` or `:` in a password works; a `/` or `?` must be
 * percent-encoded (%2F, %3F), as in libpq.
 *
 * Errors are `ConnectionStringError`s whose messages name keywords but never
 * show values.
 */
import type { ClientConfig } from "pg";

export class ConnectionStringError extends Error {
  constructor(
    message: string,
    /** The keyword at fault, when there is one. */
    readonly keyword?: string,
  ) {
    super(message);
    this.name = "ConnectionStringError";
  }
}

/** Whether `text` is meant as a URL (to word messages); `u:pw@host` and `//host` count. */
export function looksLikeUrl(text: string): boolean {
  const t = text.trim();
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(t) || t.startsWith("//") || /^[^\s=]*@/.test(t);
}

/** A connection string as a ClientConfig; throws a `ConnectionStringError`. */
export function parseConnectionString(text: string): ClientConfig {
  if (typeof text !== "string") throw new ConnectionStringError("a connection string must be a string");
  const t = text.trim();
  if (/^postgres(?:ql)?:\/\//i.test(t)) return toConfig(urlKeywords(t));
  if (/^[A-Za-z_][A-Za-z0-9_]*\s*=/.test(t)) return toConfig(keywordValues(t));
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(t)) throw new ConnectionStringError("the scheme must be postgres:// or postgresql://");
  throw new ConnectionStringError("expected a postgres:// URL or keyword/value pairs (host=... dbname=...)");
}

// ---------------------------------------------------------------- keyword/value

/** libpq's conninfo_parse: `key = value` pairs separated by whitespace. */
function keywordValues(s: string): Map<string, string> {
  const out = new Map<string, string>();
  const ws = (c: string | undefined) => c !== undefined && /\s/.test(c);
  let i = 0;
  for (;;) {
    while (ws(s[i])) i++;
    if (i >= s.length) return out;
    const start = i;
    while (i < s.length && s[i] !== "=" && !ws(s[i])) i++;
    const key = s.slice(start, i);
    while (ws(s[i])) i++;
    if (s[i] !== "=") throw new ConnectionStringError(`missing "=" after "${printableKey(key)}"`, keyName(key));
    i++;
    while (ws(s[i])) i++;
    let value = "";
    if (s[i] === "'") {
      i++;
      for (;;) {
        if (i >= s.length) throw new ConnectionStringError(`unterminated quoted value of "${printableKey(key)}"`, keyName(key));
        const c = s[i]!;
        if (c === "\\" && i + 1 < s.length) {
          value += s[i + 1];
          i += 2;
        } else if (c === "'") {
          i++;
          break;
        } else {
          value += c;
          i++;
        }
      }
    } else {
      while (i < s.length && !ws(s[i])) {
        if (s[i] === "\\" && i + 1 < s.length) i++;
        value += s[i];
        i++;
      }
    }
    out.set(key, value); // the last one wins, as in libpq
  }
}

/**
 * A keyword for an error: what the user typed, unless it does not look like
 * one — then it may be part of a value (a password with a space, unquoted).
 */
function keyName(key: string): string | undefined {
  return /^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(key) ? key : undefined;
}

function printableKey(key: string): string {
  return keyName(key) ?? "(a malformed keyword)";
}

// ---------------------------------------------------------------- URL

function decode(part: string, what: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    // A '%' not followed by two hex digits: taken literally (pg does the same).
    try {
      return decodeURIComponent(part.replace(/%(?![0-9a-f]{2})/gi, "%25"));
    } catch {
      throw new ConnectionStringError(`the ${what} is not valid percent-encoding`);
    }
  }
}

/** postgres://[user[:password]@][host][:port][/dbname][?key=value&...] as keywords. */
function urlKeywords(s: string): Map<string, string> {
  const out = new Map<string, string>();
  let rest = s.slice(s.indexOf("://") + 3);
  // The authority ends at the first '/' or '?'; within it, the last '@' ends the userinfo.
  const end = rest.search(/[/?]/);
  const authority = end < 0 ? rest : rest.slice(0, end);
  rest = end < 0 ? "" : rest.slice(end);
  const at = authority.lastIndexOf("@");
  let hostPort = authority;
  if (at >= 0) {
    const userinfo = authority.slice(0, at);
    hostPort = authority.slice(at + 1);
    const colon = userinfo.indexOf(":");
    const user = colon < 0 ? userinfo : userinfo.slice(0, colon);
    if (user !== "") out.set("user", decode(user, "user name"));
    if (colon >= 0) out.set("password", decode(userinfo.slice(colon + 1), "password"));
  }
  if (hostPort.includes(",")) throw new ConnectionStringError("several hosts are not supported", "host");
  let host = hostPort;
  let port: string | undefined;
  const v6 = /^\[([^\]]*)\](?::(.*))?$/.exec(hostPort);
  if (v6) {
    host = v6[1]!;
    port = v6[2];
  } else if (hostPort.includes("[") || hostPort.includes("]")) {
    throw new ConnectionStringError("the host is not valid (an IPv6 address goes in brackets: [::1])", "host");
  } else {
    const colon = hostPort.lastIndexOf(":");
    if (colon >= 0) {
      host = hostPort.slice(0, colon);
      port = hostPort.slice(colon + 1);
    }
  }
  // `postgres://u:p/w@host`: the authority ended inside the password.
  if (at < 0 && port !== undefined && !/^\d*$/.test(port) && rest.includes("@")) {
    throw new ConnectionStringError("a / or ? in the user name or password must be percent-encoded (%2F, %3F)", "password");
  }
  if (host !== "") out.set("host", decode(host, "host"));
  if (port !== undefined && port !== "") out.set("port", port);
  const q = rest.indexOf("?");
  const path = q < 0 ? rest : rest.slice(0, q);
  if (path.length > 1) out.set("dbname", decode(path.slice(1), "database name"));
  if (q >= 0) {
    for (const pair of rest.slice(q + 1).split("&")) {
      if (pair === "") continue;
      const eq = pair.indexOf("=");
      if (eq < 0) throw new ConnectionStringError(`query parameter "${printableKey(decode(pair, "query"))}" has no "="`);
      out.set(decode(pair.slice(0, eq), "query"), decode(pair.slice(eq + 1), "query"));
    }
  }
  return out;
}

// ---------------------------------------------------------------- to ClientConfig

function port(value: string, key: string): number {
  if (!/^\d{1,5}$/.test(value) || Number(value) < 1 || Number(value) > 65535) {
    throw new ConnectionStringError(`${key} must be a number from 1 to 65535`, key);
  }
  return Number(value);
}

/**
 * sslmode as `pg` understands it. `pg` cannot fall back between TLS and
 * plain: `allow` (plain first) is plain, and `prefer` (TLS first) is taken
 * as `require` — encrypted, certificate not checked, as pg's own
 * libpq-compatible mode does — rather than silently dropping encryption.
 */
function ssl(mode: string): ClientConfig["ssl"] {
  switch (mode) {
    case "disable":
    case "allow":
      return false;
    case "prefer":
    case "require":
      return { rejectUnauthorized: false };
    case "verify-ca":
      return { checkServerIdentity: () => undefined }; // the chain is checked, the host name not
    case "verify-full":
      return true;
  }
  throw new ConnectionStringError("sslmode must be disable, allow, prefer, require, verify-ca or verify-full", "sslmode");
}

const SUPPORTED = "host, hostaddr, port, dbname, user, password, application_name, fallback_application_name, options, sslmode, ssl, connect_timeout, client_encoding";

function toConfig(keys: Map<string, string>): ClientConfig {
  const c: ClientConfig & { client_encoding?: string; options?: string } = {};
  let fallbackName: string | undefined;
  for (const [key, value] of keys) {
    switch (key) {
      case "host":
      case "hostaddr":
        if (value.includes(",")) throw new ConnectionStringError("several hosts are not supported", key);
        // hostaddr names the address to connect to; pg has one field for both.
        if (value !== "" && (key === "hostaddr" || !keys.has("hostaddr"))) c.host = value;
        break;
      case "port":
        if (value !== "") c.port = port(value, key);
        break;
      case "dbname":
        if (value !== "") c.database = value;
        break;
      case "user":
        if (value !== "") c.user = value;
        break;
      case "password":
        c.password = value;
        break;
      case "application_name":
        c.application_name = value;
        break;
      case "fallback_application_name":
        fallbackName = value;
        break;
      case "options":
        c.options = value;
        break;
      case "client_encoding":
        c.client_encoding = value;
        break;
      case "sslmode":
        c.ssl = ssl(value);
        break;
      case "ssl": // pg's own URL parameter
        if (!keys.has("sslmode")) {
          if (value === "true" || value === "1") c.ssl = true;
          else if (value === "false" || value === "0") c.ssl = false;
          else throw new ConnectionStringError("ssl must be true or false", key);
        }
        break;
      case "connect_timeout":
        if (!/^\d+$/.test(value)) throw new ConnectionStringError("connect_timeout must be a whole number of seconds", key);
        c.connectionTimeoutMillis = Number(value) * 1000;
        break;
      default:
        throw new ConnectionStringError(`unsupported connection parameter "${printableKey(key)}" (supported: ${SUPPORTED})`, keyName(key));
    }
  }
  if (c.application_name === undefined && fallbackName !== undefined) c.application_name = fallbackName;
  return c;
}

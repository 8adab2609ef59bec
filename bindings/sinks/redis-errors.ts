/**
 * What the Redis sink makes of a server's error answers (their first word,
 * the code): the ones that say "not now", retried after a pause with
 * everything unconfirmed sent again in order, and the remedies for the
 * ones that retrying will not change (a SinkError's hint).
 */

/** Answers that say "not now": retried. */
export const TRANSIENT = new Set(["LOADING", "BUSY", "OOM", "MASTERDOWN", "TRYAGAIN", "NOSCRIPT", "READONLY", "MISCONF", "NOREPLICAS"]);

/** Remedies for the answers that retrying will not change. */
export function hintFor(code: string, message: string, stream: string | undefined): string | undefined {
  switch (code) {
    case "WRONGTYPE":
      return `${stream ?? "a key"} holds something other than a stream: delete or rename it, or write elsewhere (?key=, ?prefix=)`;
    case "NOAUTH":
      return "the server wants a password: redis://:PASSWORD@host, or redis://USER:PASSWORD@host for an ACL user";
    case "WRONGPASS":
      return "check the user and password in the URL";
    case "NOPERM":
      return "the user needs EVALSHA and SCRIPT LOAD, GET and SET on the position key, and XADD on the streams";
    case "MOVED":
    case "ASK":
    case "CROSSSLOT":
    case "CLUSTERDOWN":
      return "this is a Redis Cluster: the sink writes to one server (a standalone Redis, or a Sentinel setup's primary)";
    default:
      if (/unknown command/i.test(message)) return "the sink needs Redis 5 or later (streams) with Lua scripting";
      if (/without any password configured/i.test(message)) return "the server has no password: leave it out of the URL";
      return undefined;
  }
}

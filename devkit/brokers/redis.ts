/**
 * Debian's redis-server (7.0) on a free port of 127.0.0.1, its append-only
 * file fsynced on every write (so what it acknowledged survives a restart),
 * no RDB snapshots; `halt()` / `start()` restart it on the same data.
 */
import { startBroker, type Broker } from "./tied.ts";

export const REDIS_SERVER = "redis-server";

/** `extra`: more settings (`["--requirepass", "pw"]`), after the defaults, which they override. */
export function startRedis(extra: readonly string[] = []): Promise<Broker> {
  return startBroker("redis", REDIS_SERVER, (port, dir) => [
    "--bind", "127.0.0.1", "--port", String(port), "--dir", dir,
    "--appendonly", "yes", "--appendfsync", "always", "--save", "", "--protected-mode", "no", "--daemonize", "no",
    ...extra,
  ]);
}

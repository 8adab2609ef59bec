/**
 * Debian's nats-server (2.9) with JetStream on, file storage in the test's
 * folder, on a free port of 127.0.0.1; `halt()` / `start()` stop and start
 * it on the same port and store (a broker restart mid-stream).
 */
import { startBroker, type Broker } from "./tied.ts";

export const NATS_SERVER = "nats-server";

/** `extra`: more nats-server arguments (e.g. `--user a --pass b`). */
export function startNats(extra: readonly string[] = []): Promise<Broker> {
  return startBroker("nats", NATS_SERVER, (port, dir) => ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", `${dir}/js`, ...extra]);
}

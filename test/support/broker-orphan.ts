/** Starts a nats-server and a redis-server, prints where, and waits to be killed (test/brokers.test.ts). */
import { startNats } from "../../devkit/brokers/nats.ts";
import { startRedis } from "../../devkit/brokers/redis.ts";

const brokers = [await startNats(), await startRedis()];
process.stdout.write(`${JSON.stringify(brokers.map((b) => ({ port: b.port, dir: b.dir })))}\n`);
setInterval(() => {}, 1000);

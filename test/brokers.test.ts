/**
 * The broker harness (devkit/brokers/): nats-server and redis-server start
 * on 127.0.0.1, restart on the same port, and never outlive their test
 * process — not even a kill -9 of it.
 */
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import { fileURLToPath } from "node:url";
import { describe, expect, it, onTestFinished } from "vitest";
import { startNats } from "../devkit/brokers/nats.ts";
import { startRedis } from "../devkit/brokers/redis.ts";
import { tsxChildEnv } from "./support/tsx-child.ts";

const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = net.connect(port, "127.0.0.1");
    s.once("connect", () => (s.destroy(), resolve(true)));
    s.once("error", () => resolve(false));
  });

async function until(ok: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await ok()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return ok();
}

describe("broker harness", () => {
  for (const [name, start] of [["nats", startNats], ["redis", startRedis]] as const) {
    it(`${name}: starts, halts (keeping its folder), starts again on the same port; stop() removes its folder`, async () => {
      const b = await start();
      try {
        expect(await listening(b.port)).toBe(true);
        await b.halt();
        expect(await listening(b.port)).toBe(false);
        // The data stays for start(), however long the broker is down.
        await new Promise((r) => setTimeout(r, 1000));
        expect(fs.existsSync(b.dir)).toBe(true);
        await b.start();
        expect(await listening(b.port)).toBe(true);
      } finally {
        await b.stop();
      }
      expect(await listening(b.port)).toBe(false);
      expect(fs.existsSync(b.dir)).toBe(false);
    });
  }

  it("a test process killed with SIGKILL leaves no broker and no folder", async () => {
    const script = fileURLToPath(new URL("./support/broker-orphan.ts", import.meta.url));
    const tsx = tsxChildEnv();
    onTestFinished(() => tsx.remove());
    const child = spawn(process.execPath, ["--import", "tsx", script], { stdio: ["ignore", "pipe", "inherit"], env: tsx.env });
    const line = await new Promise<string>((resolve, reject) => {
      let out = "";
      child.stdout!.on("data", (b) => {
        out += String(b);
        if (out.includes("\n")) resolve(out.trim());
      });
      child.once("exit", () => reject(new Error(`exited before starting its brokers: ${out}`)));
    });
    const started = JSON.parse(line) as { port: number; dir: string }[];
    for (const b of started) expect(await listening(b.port)).toBe(true);
    child.kill("SIGKILL");
    for (const b of started) {
      expect(await until(async () => !(await listening(b.port)), 5000)).toBe(true);
      expect(await until(() => !fs.existsSync(b.dir), 5000)).toBe(true);
    }
  });
});

// serve_node_util.mjs — the node serve tests' helpers: a `tinygpt serve` on
// 127.0.0.1 with an ephemeral port, `tinygpt generate`'s text, and a tally
// ending with the plain 'N passed, N failed' line.
import { spawn, execFileSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));

export function startServer(exe, args = []) {
  return new Promise((resolve, reject) => {
    const p = spawn(exe, ["serve", "--port", "0", ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "", err = "";
    p.stderr.on("data", (d) => { err += d; });
    const timer = setTimeout(() => { p.kill(); reject(new Error("serve did not start: " + err)); }, 30000);
    p.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m && !p.port) {
        clearTimeout(timer);
        p.port = +m[1];
        resolve({
          port: p.port, proc: p,
          weights: (name) => path.resolve(here, "..", "..", "weights", name + ".gguf"),
          stop: () => new Promise((res) => { p.on("exit", (code) => res(code)); p.kill("SIGINT"); }),
        });
      }
    });
    p.on("exit", (code) => { if (!p.port) reject(new Error(`serve exited ${code}: ${err}`)); });
  });
}

export function generate(exe, prompt, n, seed, extra = []) {
  const out = execFileSync(exe, ["generate", "-p", prompt, "-n", String(n), "--seed", String(seed), "--no-echo", ...extra], { stdio: ["ignore", "pipe", "ignore"] }).toString();
  return out.endsWith("\n") ? out.slice(0, -1) : out;
}

export class Checks {
  constructor() { this.passed = 0; this.failed = 0; }
  check(ok, what) {
    console.log((ok ? "ok: " : "FAIL: ") + what);
    if (ok) this.passed++; else this.failed++;
    return ok;
  }
  finish() {
    console.log(`${this.passed} passed, ${this.failed} failed`);
    return this.failed ? 1 : 0;
  }
}

// A careful application on the TypeScript SDK's client side (@agentclientprotocol/sdk 2.4.0,
// experimental v2 API), written the way the idempotency-key RFD asks a Client to behave, for
// `acp-chaos probe --client -- node client.mjs {agent}`:
//
// - the user submits N prompts (distinct texts, one session), each with a key made at submit
//   time (crypto.randomUUID) and kept with the pending input;
// - when the Agent process ends, the app starts it again, initializes, resumes the session,
//   and resends what is still pending with the same key (C1, C6);
// - it gives up after 5 restarts and exits 1 with the pending inputs listed (shown to the user).
//
// Two flags make it a worse Client, to see the probe catch it:
// - `--bug new-key`: a resend gets a fresh key (breaks C1: the Agent inserts the input twice);
// - `--no-key`: no key at all, as the SDK's types allow, and resends anyway (C9).
//
// Usage: node client.mjs [--submissions N] [--bug new-key] [--no-key] AGENT_CMD ARGS...
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { Readable, Writable } from "node:stream";
import { client, ndJsonStream } from "@agentclientprotocol/sdk/experimental/v2";

let args = process.argv.slice(2);
let n = 3;
let newKeyBug = false;
let noKey = false;
for (;;) {
  if (args[0] === "--submissions") {
    n = Number(args[1]);
    args = args.slice(2);
  } else if (args[0] === "--bug" && args[1] === "new-key") {
    newKeyBug = true;
    args = args.slice(2);
  } else if (args[0] === "--no-key") {
    noKey = true;
    args = args.slice(1);
  } else {
    break;
  }
}
if (args.length === 0 || !(n >= 1)) {
  console.error("usage: node client.mjs [--submissions N] [--bug new-key] [--no-key] AGENT_CMD ARGS...");
  process.exit(2);
}

const pending = new Map();
for (let i = 1; i <= n; i++) {
  pending.set(i, { text: `input ${i} [ts-sdk-s${i}]`, key: randomUUID() });
}
let sessionId = null;
const cwd = process.cwd();

for (let restarts = 0; pending.size > 0 && restarts <= 5; restarts++) {
  const child = spawn(args[0], args.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
  const exited = new Promise((resolve) => child.on("exit", () => resolve()));
  const died = exited.then(() => {
    throw new Error("the agent process exited");
  });
  died.catch(() => {});
  const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  try {
    await client()
      .onNotification("session/update", () => {})
      .connectWith(stream, async (ctx) => {
        await Promise.race([
          ctx.request("initialize", {
            protocolVersion: 2,
            info: { name: "acp-chaos-ts-sdk-client", version: "0.1.0" },
            capabilities: {},
          }),
          died,
        ]);
        if (sessionId === null) {
          const r = await Promise.race([ctx.request("session/new", { cwd }), died]);
          sessionId = r.sessionId;
        } else {
          await Promise.race([ctx.request("session/resume", { sessionId, cwd }), died]);
        }
        for (const [i, p] of [...pending]) {
          const params = { sessionId, prompt: [{ type: "text", text: p.text }] };
          if (!noKey) {
            // The bug: a resend makes its key anew instead of taking the stored one.
            params.idempotencyKey = newKeyBug && p.sent ? randomUUID() : p.key;
          }
          p.sent = true;
          const r = await Promise.race([ctx.request("session/prompt", params), died]);
          console.error(`submission ${i} acknowledged as ${JSON.stringify(r.messageId)}`);
          pending.delete(i);
        }
      });
  } catch (e) {
    console.error(`connection ${restarts + 1} failed: ${e.message}`);
  }
  child.kill("SIGKILL");
}
for (const [i] of pending) {
  console.error(`submission ${i} still pending: shown to the user`);
}
process.exit(pending.size > 0 ? 1 : 0);

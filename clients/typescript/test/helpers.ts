import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

import { Client, type ClientOptions } from "@reasoningbank/client";

/** The live server the pytest harness started, and tokens of its banks. */
export const RB_URL = required("RB_URL");
export const RB_TOKEN = required("RB_TOKEN");
/** A token of another team's bank: its trajectories must answer 404 to us. */
export const RB_OTHER_TOKEN = required("RB_OTHER_TOKEN");

/** Retries in tests: real, but short. */
export const FAST_RETRY = { maxAttempts: 3, backoffBase: 0.05, backoffMax: 0.2, maxTotalDelay: 5 };

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: these tests run from tests/clients/test_typescript.py`);
  return value;
}

export function client(options: ClientOptions = {}): Client {
  return new Client({ url: RB_URL, token: RB_TOKEN, retry: FAST_RETRY, timeout: 60, ...options });
}

export interface Seen {
  at: number;
  method: string;
  url: string;
  body: string;
}

export type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void | Promise<void>;

/** A real HTTP server on 127.0.0.1 answering with `handler`; `seen` lists every request. */
export async function serve(handler: Handler): Promise<{ url: string; seen: Seen[]; close: () => Promise<void> }> {
  const seen: Seen[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString();
      seen.push({ at: performance.now(), method: req.method ?? "", url: req.url ?? "", body });
      void handler(req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A handler answering from a script of [status, headers, body]; the last entry repeats. */
export function scripted(...script: Array<[number, Record<string, string>, unknown]>): Handler {
  return (_req, res) => {
    const [status, headers, body] = (script.length > 1 ? script.shift() : script[0])!;
    res.writeHead(status, { "Content-Type": "application/json", ...headers });
    res.end(JSON.stringify(body));
  };
}

import http from "node:http";
import { serveStatic, type Reply } from "./static.js";

const PORT = Number(process.env.PORT ?? 8080);

async function route(method: string, pathname: string): Promise<Reply> {
  if (method !== "GET") {
    return { status: 405, headers: { Allow: "GET" }, body: "" };
  }
  return serveStatic(pathname);
}

http
  .createServer((req, res) => {
    const pathname = (req.url ?? "/").split("?")[0];
    route(req.method ?? "GET", pathname)
      .then((reply) => {
        res.writeHead(reply.status, reply.headers);
        res.end(reply.body);
      })
      .catch(() => {
        res.writeHead(500);
        res.end();
      });
  })
  .listen(PORT);

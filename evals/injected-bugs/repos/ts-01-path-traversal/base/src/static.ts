import { readFile } from "node:fs/promises";
import path from "node:path";
import { contentType } from "./mime.js";

export interface Reply {
  status: number;
  headers: Record<string, string>;
  body: Buffer | string;
}

const PUBLIC_DIR = path.resolve("public");

/** The file of the public directory named by `urlPath`, or a 404. */
export async function serveStatic(urlPath: string): Promise<Reply> {
  const relative = urlPath === "/" ? "index.html" : urlPath.slice(1);
  if (relative.split("/").includes("..") || relative.includes("\0")) {
    return notFound();
  }
  return readReply(path.join(PUBLIC_DIR, relative));
}

async function readReply(file: string): Promise<Reply> {
  try {
    const body = await readFile(file);
    return { status: 200, headers: { "Content-Type": contentType(file) }, body };
  } catch {
    return notFound();
  }
}

export function notFound(): Reply {
  return { status: 404, headers: { "Content-Type": "text/plain" }, body: "not found" };
}

// TypeScript examples for javascript.yaml, checked by `semgrep --test`.
import { exec } from "child_process";
import * as fs from "fs/promises";
import * as path from "path";

export async function report(db: Db, table: string, id: string): Promise<void> {
  // ruleid: javascript.sql-built-from-strings
  await db.query(`SELECT * FROM ${table} WHERE id = ${id}`);
  // ok: javascript.sql-built-from-strings
  await db.query("SELECT * FROM reports WHERE id = $1", [id]);
}

export function ping(host: string): void {
  // ruleid: javascript.shell-command-built-from-input
  exec("ping -c 1 " + host);
}

export async function readNote(name: string): Promise<string> {
  // ruleid: javascript.path-traversal-into-file-api
  return fs.readFile(path.join("/srv/notes", name), "utf8");
}

export async function readNoteSafely(name: string): Promise<string> {
  // ok: javascript.path-traversal-into-file-api
  return fs.readFile(path.join("/srv/notes", path.basename(name)), "utf8");
}

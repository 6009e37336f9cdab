import type { Change, Remote } from "./remote.js";

/** Pushes `changes` in order; returns the ids of those that failed. */
export async function pushAll(remote: Remote, changes: Change[]): Promise<string[]> {
  const failed: string[] = [];
  for (const change of changes) {
    try {
      await remote.push(change);
    } catch {
      failed.push(change.id);
    }
  }
  return failed;
}

/** Splits changes into those to push now and those that wait for a create of the same id. */
export function ready(changes: Change[], created: Set<string>): [Change[], Change[]] {
  const now: Change[] = [];
  const later: Change[] = [];
  for (const change of changes) {
    (change.kind === "create" || created.has(change.id) ? now : later).push(change);
  }
  return [now, later];
}

import type { Queryable } from "./db.js";
import { getOrder } from "./orders.js";

export interface Reply {
  status: number;
  body: unknown;
}

/** Answers one GET request of the API. */
export async function handle(db: Queryable, url: URL): Promise<Reply> {
  const match = /^\/orders\/(\d+)$/.exec(url.pathname);
  if (match) {
    const order = await getOrder(db, Number(match[1]));
    return order ? { status: 200, body: order } : { status: 404, body: { error: "no such order" } };
  }
  return { status: 404, body: { error: "not found" } };
}

import type { Queryable } from "./db.js";

export interface Order {
  id: number;
  customerId: number;
  status: Status;
  totalCents: number;
}

const STATUSES = ["open", "paid", "shipped", "cancelled"] as const;
export type Status = (typeof STATUSES)[number];

export function isStatus(value: string): value is Status {
  return (STATUSES as readonly string[]).includes(value);
}

const COLUMNS = `id, customer_id AS "customerId", status, total_cents AS "totalCents"`;

export async function getOrder(db: Queryable, id: number): Promise<Order | undefined> {
  const { rows } = await db.query<Order>(`SELECT ${COLUMNS} FROM orders WHERE id = $1`, [id]);
  return rows[0];
}

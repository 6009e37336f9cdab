/** The part of a database client the API uses (node-postgres compatible). */
export interface Queryable {
  query<R>(sql: string, params?: unknown[]): Promise<{ rows: R[] }>;
}

/** The first row of `sql`, or undefined when there is none. */
export async function one<R>(db: Queryable, sql: string, params: unknown[] = []): Promise<R | undefined> {
  const { rows } = await db.query<R>(sql, params);
  return rows[0];
}

/** Runs `work` in a transaction: BEGIN, then COMMIT, or ROLLBACK when it throws. */
export async function inTransaction<T>(db: Queryable, work: () => Promise<T>): Promise<T> {
  await db.query("BEGIN");
  try {
    const result = await work();
    await db.query("COMMIT");
    return result;
  } catch (e) {
    await db.query("ROLLBACK");
    throw e;
  }
}

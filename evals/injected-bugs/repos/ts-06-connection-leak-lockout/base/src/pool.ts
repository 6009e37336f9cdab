/** A pooled database connection; it must be released exactly once. */
export interface PoolClient {
  query<R>(sql: string, params?: unknown[]): Promise<{ rows: R[] }>;
  release(): void;
}

/** A connection pool (node-postgres compatible). */
export interface Pool {
  connect(): Promise<PoolClient>;
}

/** Runs `work` with a client of `pool`, releasing it afterwards. */
export async function withClient<T>(pool: Pool, work: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    return await work(client);
  } finally {
    client.release();
  }
}

import type { Pool } from "./pool.js";

export interface UserRow {
  id: number;
  email: string;
  passwordHash: string;
  failedAttempts: number;
}

/** The user with `email`, or null. */
export async function findUser(pool: Pool, email: string): Promise<UserRow | null> {
  const client = await pool.connect();
  try {
    const res = await client.query<UserRow>(
      'SELECT id, email, password_hash AS "passwordHash", failed_attempts AS "failedAttempts" FROM users WHERE email = $1',
      [email],
    );
    return res.rows[0] ?? null;
  } finally {
    client.release();
  }
}

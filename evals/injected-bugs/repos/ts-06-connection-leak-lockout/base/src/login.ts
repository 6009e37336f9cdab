import type { Pool } from "./pool.js";
import { findUser } from "./users.js";

export type LoginResult = { ok: true; userId: number } | { ok: false; reason: "unknown" | "wrong-password" };

export type Verify = (password: string, hash: string) => Promise<boolean>;

/** Checks `password` against the stored hash of the user with `email`. */
export async function login(pool: Pool, email: string, password: string, verify: Verify): Promise<LoginResult> {
  const user = await findUser(pool, email);
  if (!user) {
    return { ok: false, reason: "unknown" };
  }
  if (!(await verify(password, user.passwordHash))) {
    return { ok: false, reason: "wrong-password" };
  }
  return { ok: true, userId: user.id };
}

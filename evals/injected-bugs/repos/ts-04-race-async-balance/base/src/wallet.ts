import type { Store } from "./store.js";

/** Balances are in cents. */
export class Wallets {
  constructor(private readonly store: Store) {}

  async balance(id: string): Promise<number> {
    return (await this.store.get(id)) ?? 0;
  }

  async deposit(id: string, amount: number): Promise<number> {
    if (!Number.isInteger(amount) || amount <= 0) {
      throw new RangeError("amount must be a positive number of cents");
    }
    return this.store.increment(id, amount);
  }
}

/** Where balances live: an in-memory map here, a key-value server in production. */
export interface Store {
  get(key: string): Promise<number | undefined>;
  set(key: string, value: number): Promise<void>;
  /** Adds `delta` atomically and returns the new value. */
  increment(key: string, delta: number): Promise<number>;
}

export class MemoryStore implements Store {
  private readonly values = new Map<string, number>();

  async get(key: string): Promise<number | undefined> {
    return this.values.get(key);
  }

  async set(key: string, value: number): Promise<void> {
    this.values.set(key, value);
  }

  async increment(key: string, delta: number): Promise<number> {
    const next = (this.values.get(key) ?? 0) + delta;
    this.values.set(key, next);
    return next;
  }
}

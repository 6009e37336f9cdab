export interface Change {
  id: string;
  kind: "create" | "update" | "delete";
  payload: Record<string, unknown>;
}

/** An error the remote reports; `retryable` for timeouts and 5xx answers. */
export class RemoteError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
  }
}

/** The calendar service, as the worker sees it. */
export interface Remote {
  push(change: Change): Promise<void>;
}

/** A remote that keeps what it is sent, for tests. */
export class RecordingRemote implements Remote {
  readonly pushed: Change[] = [];

  async push(change: Change): Promise<void> {
    this.pushed.push(change);
  }
}

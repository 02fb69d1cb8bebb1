// A stream of output bytes cut into lines as they come: the task view
// draws complete lines once and keeps the unfinished last line apart, so
// that a running task's output costs one small DOM change per message.

/** LineBuffer decodes a stream's bytes (UTF-8, split anywhere) into numbered lines. */
export class LineBuffer {
  private dec = new TextDecoder();
  private rest = "";
  /** count is how many complete lines were handed out. */
  count = 0;

  /** push takes the next bytes and returns the lines they complete, in order; the unfinished line stays in pending(). */
  push(bytes: Uint8Array): string[] {
    const text = this.rest + this.dec.decode(bytes, { stream: true });
    const parts = text.split("\n");
    this.rest = parts.pop() ?? "";
    this.count += parts.length;
    return parts;
  }

  /** pending is the last line so far, not yet ended by a newline. */
  pending(): string {
    return this.rest;
  }

  /** reset forgets everything (another copy's output starts from its beginning). */
  reset(): void {
    this.dec = new TextDecoder();
    this.rest = "";
    this.count = 0;
  }
}

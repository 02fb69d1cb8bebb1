// What differs between the commands of a set: a set of 300 (or 100,000)
// tasks usually runs one program with one argument changing, and showing the
// same truncated prefix on every row hides exactly that argument.

import { commandText } from "./format";
import type { TaskSpec } from "./gen/batch/v1/types_pb";

const digit = /[0-9]/;

/** commonPrefixLen is the length of the longest common prefix of a and b. */
function commonPrefixLen(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

/** commonSuffixLen is the length of the longest common suffix of a and b. */
function commonSuffixLen(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(a.length - 1 - i) === b.charCodeAt(b.length - 1 - i)) i++;
  return i;
}

/**
 * CommandParts learns the commands of a set one task at a time (a set
 * arrives in chunks) and says, for each task, the part of its command that
 * differs from the others: the text between the prefix and the suffix every
 * command shares, widened so that a number is never cut in two ("frame 10"
 * and "frame 11" differ in "10", not in "0" and "1"), plus the environment
 * variables whose values differ.
 */
export class CommandParts {
  private first: string | undefined;
  private pre = 0; // raw common prefix length
  private suf = 0; // raw common suffix length
  private minLen = Infinity;
  private count = 0;
  private allSame = true;
  /** env values seen per key: the first value, or null once they differ (or a task lacks the key). */
  private env = new Map<string, string | null>();

  /** add learns one task's command. */
  add(spec: TaskSpec | undefined): void {
    const cmd = commandText(spec);
    if (this.first === undefined) {
      this.first = cmd;
      this.pre = cmd.length;
      this.suf = cmd.length;
    } else {
      this.pre = Math.min(this.pre, commonPrefixLen(this.first, cmd));
      this.suf = Math.min(this.suf, commonSuffixLen(this.first, cmd));
      if (cmd !== this.first) this.allSame = false;
    }
    this.minLen = Math.min(this.minLen, cmd.length);
    const env = spec?.env ?? {};
    if (this.count === 0) {
      for (const [k, v] of Object.entries(env)) this.env.set(k, v);
    } else {
      for (const [k, v] of this.env) if (v !== null && env[k] !== v) this.env.set(k, null);
      for (const k of Object.keys(env)) if (!this.env.has(k)) this.env.set(k, null);
    }
    this.count++;
  }

  /** shared is the prefix and suffix every command has, once it is worth saying (two commands or more, and something shared). */
  shared(): { prefix: string; suffix: string } | undefined {
    if (this.count < 2 || this.first === undefined || this.allSame) return undefined;
    const { pre, suf } = this.bounds();
    if (pre === 0 && suf === 0) return undefined;
    return { prefix: this.first.slice(0, pre), suffix: this.first.slice(this.first.length - suf) };
  }

  /** sameCommand is the one command every task runs, when there are two tasks or more and only their environment differs (an array or file set). */
  sameCommand(): string | undefined {
    if (this.count < 2 || this.first === undefined || !this.allSame || this.varyingEnv().length === 0) return undefined;
    return this.first;
  }

  /** varyingEnv lists the environment variables whose values differ between tasks, sorted. */
  varyingEnv(): string[] {
    return [...this.env].filter(([, v]) => v === null).map(([k]) => k).sort();
  }

  /** bounds are the shared prefix and suffix lengths, widened to whole numbers and never overlapping. */
  private bounds(): { pre: number; suf: number } {
    const f = this.first ?? "";
    let pre = this.pre;
    // Do not end the prefix inside a number, nor start the suffix inside one.
    while (pre > 0 && digit.test(f[pre - 1])) pre--;
    // "0.1" and "0.2" differ in "0.1", not in "1".
    if (pre >= 2 && f[pre - 1] === "." && digit.test(f[pre - 2])) {
      while (pre > 0 && (digit.test(f[pre - 1]) || f[pre - 1] === ".")) pre--;
    }
    let suf = Math.max(0, Math.min(this.suf, this.minLen - pre));
    while (suf > 0 && digit.test(f[f.length - suf])) suf--;
    return { pre, suf };
  }

  /**
   * varying is what the command column shows for a task: the part of its
   * command that differs, then each varying environment variable
   * ("FRAME=12"). It is the whole command when nothing is shared (or for a
   * lone task), and the whole command after the environment when only the
   * environment differs.
   */
  varying(spec: TaskSpec | undefined): string {
    const cmd = commandText(spec);
    const env = this.varyingEnv().map((k) => `${k}=${spec?.env?.[k] ?? ""}`);
    const sh = this.shared();
    let mid = cmd;
    if (sh) {
      mid = cmd.slice(sh.prefix.length, cmd.length - sh.suffix.length).trim();
      if (mid === "") mid = env.length > 0 ? "" : cmd;
    }
    // Only the environment differs (an array: $BATCH_ARRAY_VALUE): the value
    // alone, the one command once in the note above the table.
    if (this.sameCommand() !== undefined) return env.length === 1 ? (spec?.env?.[this.varyingEnv()[0]] ?? "") : env.join(" ");
    if (mid === cmd && env.length > 0) return [...env, cmd].join(" ");
    return [mid, ...env].filter((s) => s !== "").join(" ") || cmd;
  }
}

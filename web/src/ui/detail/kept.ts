// The kept files of a task's result in its output panel: each with its
// size, and a download for those kept, or why it was not kept.

import { fmtBytes, keptFileName } from "../../format";
import type { GetOutputResponse } from "../../gen/batch/v1/taskset_pb";
import { h, isDisabled, setDisabled } from "../dom";
import type { SetCtx } from "./context";

/** keptPage is how many bytes of a kept file one GetKeptFile call reads. */
const keptPage = 4 << 20;

/** keptSection lists the files the output r's attempt kept (disclose --keep), or returns null when it has none. */
export function keptSection(sc: SetCtx, index: number, r: GetOutputResponse): HTMLElement | null {
  const { ctx, setId } = sc;
  if (r.files.length === 0) return null;

  /** download saves one kept file whole, read a page at a time. */
  async function download(path: string, size: number, b: HTMLButtonElement): Promise<void> {
    if (isDisabled(b)) return;
    setDisabled(b, true);
    try {
      const parts: Uint8Array[] = [];
      let got = 0;
      for (;;) {
        const k = await ctx.clients.tasks.getKeptFile(
          { setId, index, attempt: r.attempt, path, offset: BigInt(got), limit: BigInt(keptPage) },
          { signal: ctx.signal },
        );
        if (k.content.length === 0) break;
        parts.push(k.content);
        got += k.content.length;
        if (got >= Math.max(size, Number(k.file?.size ?? 0))) break;
      }
      const url = URL.createObjectURL(new Blob(parts as BlobPart[], { type: "application/octet-stream" }));
      const a = h("a", { href: url, download: keptFileName(setId, index, path), hidden: true });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
    } catch (err) {
      ctx.fail(err, `Downloading ${path} of task ${index}`);
    } finally {
      setDisabled(b, false);
    }
  }

  const rows = r.files.map((f) => {
    let kept: HTMLElement | string;
    if (f.notKept === "") {
      const b = h("button", { type: "button", class: "link", "data-kept": f.path }, "Download");
      b.addEventListener("click", () => void download(f.path, Number(f.size), b));
      kept = b;
    } else kept = `not kept: ${f.notKept}`;
    return h(
      "tr",
      null,
      h("td", null, h("code", null, f.path)),
      h("td", { class: "num" }, f.notKept !== "" && f.size === 0n ? "—" : fmtBytes(Number(f.size))),
      h("td", null, kept),
    );
  });
  const head = h("thead", null, h("tr", null, ["File", "Size", ""].map((c) => h("th", { scope: "col" }, c))));
  return h(
    "section",
    { class: "kept", id: "kept", "aria-labelledby": "kept-h" },
    h("h4", { id: "kept-h" }, "Kept files"),
    h("table", { class: "attempts-table" }, head, h("tbody", null, rows)),
  );
}

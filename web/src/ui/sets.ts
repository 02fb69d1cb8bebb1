// The task sets view: the list of the person's sets beside the disclose form
// and the one set watched live (detail/detail.ts).

import { describeError } from "../errors";
import { fmtCount, plural } from "../format";
import type { TaskSet } from "../gen/batch/v1/types_pb";
import type { Ctx } from "./context";
import { mountDetail } from "./detail/detail";
import { discloseForm } from "./disclose";
import { h, replace } from "./dom";

/** mountSets draws the task sets view into root; setId selects the set to watch. */
export function mountSets(root: HTMLElement, ctx: Ctx, setId: bigint | undefined): void {
  const list = h("ul", { class: "set-list", id: "set-list" });
  const listNote = h("p", { class: "muted" }, "Loading…");
  const detail = h("section", { class: "detail card", id: "set-detail", "aria-labelledby": "detail-h" });
  const form = discloseForm(ctx);
  root.append(
    h(
      "div",
      { class: `layout${setId === undefined ? "" : " has-set"}` },
      h(
        "aside",
        { class: "side" },
        h(
          "section",
          { class: "card", "aria-labelledby": "sets-h" },
          h("h2", { id: "sets-h", tabindex: -1 }, "Your task sets"),
          listNote,
          list,
        ),
        form.el,
      ),
      detail,
    ),
  );

  let sets: TaskSet[] = [];
  let listFailing = false;
  let drawn = "";
  function drawList(): void {
    listNote.textContent = sets.length === 0 ? "None yet: disclose one below." : "";
    listNote.hidden = sets.length > 0;
    // The list is polled every five seconds: draw it again only when it changed.
    const key = sets.map((ts) => `${ts.id}\t${ts.name}\t${setLine(ts)}`).join("\n");
    if (key === drawn) return;
    drawn = key;
    replace(
      list,
      sets.map((ts) =>
        h(
          "li",
          null,
          h(
            "a",
            { href: `#/sets/${ts.id}`, "aria-current": ts.id === setId ? "page" : undefined, "data-set": String(ts.id) },
            h("span", { class: "set-name" }, ts.name || "(unnamed)"),
            h("span", { class: "muted set-line" }, setLine(ts)),
          ),
        ),
      ),
    );
  }
  async function loadList(): Promise<void> {
    try {
      const r = await ctx.clients.tasks.listTaskSets({ pageSize: 100 }, { signal: ctx.signal });
      sets = r.taskSets;
      drawList();
      form.listed(sets.length);
      if (listFailing) ctx.clearProblem();
      listFailing = false;
    } catch (err) {
      // Signed out, the sign-in box above says what to do; the list is not broken.
      listNote.textContent = describeError(err, "").signIn ? "Sign in to see your task sets." : "Could not load the list.";
      listNote.hidden = false;
      drawn = "";
      list.replaceChildren();
      // Say it once, not every five seconds while the server is away.
      if (!listFailing) ctx.fail(err, "Listing your task sets");
      listFailing = true;
    }
  }
  void loadList();
  const timer = setInterval(() => void loadList(), 5000);
  ctx.signal.addEventListener("abort", () => clearInterval(timer));

  if (setId === undefined) {
    replace(
      detail,
      h("h2", { id: "detail-h" }, "No task set selected"),
      h("p", null, "Pick a task set from the list, or disclose a new one with the form."),
    );
    return;
  }
  mountDetail(detail, ctx, setId, (ts) => {
    // The watched set's line in the list follows the stream (once a frame at most).
    const i = sets.findIndex((x) => x.id === ts.id);
    if (i < 0) return;
    sets[i] = ts;
    const line = list.querySelector<HTMLElement>(`a[data-set="${ts.id}"] .set-line`);
    const text = setLine(ts);
    if (line && line.textContent !== text) line.textContent = text;
  });
}

/** setLine is a set's line in the list: its id, size, and how many tasks finished, are requested and run. */
function setLine(ts: TaskSet): string {
  const c = ts.counts;
  if (!c) return `#${ts.id}`;
  const parts = [`#${ts.id}`, plural(c.total, "task")];
  if (c.finished > 0n) parts.push(`${fmtCount(c.finished)} finished`);
  if (c.requested > 0n) parts.push(`${fmtCount(c.requested)} requested`);
  if (c.running > 0n) parts.push(`${fmtCount(c.running)} running`);
  return parts.join(" · ");
}

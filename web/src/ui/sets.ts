// The task sets view: the list of the person's sets (searched, filtered and
// paged by the server's ListTaskSets filters) beside the one set watched
// live (detail/detail.ts) or, with none open, the overview and the
// disclose form.

import { describeError } from "../errors";
import { fmtCount, plural } from "../format";
import type { TaskSet } from "../gen/batch/v1/types_pb";
import { filtered, idOf, listRequest, setStateLook } from "../setfilter";
import type { SetFilter } from "../setfilter";
import type { Ctx } from "./context";
import { mountDetail } from "./detail/detail";
import { discloseForm } from "./disclose";
import { h, replace } from "./dom";
import { historyCard } from "./historychart";
import { mountOverview } from "./overview";
import { setFilterBar } from "./setfilterbar";

/** PageSize is how many sets one page of the list holds. */
export const PageSize = 50;

/**
 * listState is the list's filter and page, kept across views: opening a set
 * draws the view again, and the person stays on the page they found it on.
 */
const listState = {
  filter: { q: "", state: "", owner: "", label: "" } as SetFilter,
  /** tokens are the page tokens of the pages before the current one, and the current one's last. */
  tokens: [""] as string[],
  admin: false,
};

/** mountSets draws the task sets view into root; setId selects the set to watch. */
export function mountSets(root: HTMLElement, ctx: Ctx, setId: bigint | undefined): void {
  const list = h("ul", { class: "set-list", id: "set-list" });
  const listNote = h("p", { class: "muted", id: "set-list-note", role: "status" }, "Loading…");
  const detail = h("section", { class: "detail card", id: "set-detail", "aria-labelledby": "detail-h" });
  const newer = h("button", { type: "button", id: "sets-newer" }, "← Newer");
  const older = h("button", { type: "button", id: "sets-older" }, "Older →");
  const pageNote = h("span", { class: "muted page-note", id: "sets-page" });
  const pager = h("div", { class: "pager", "aria-label": "Pages of task sets", role: "group" }, newer, pageNote, older);
  const bar = setFilterBar(listState.filter, listState.admin, () => {
    listState.tokens = [""];
    drawn = "";
    void loadList();
  });
  const side = h(
    "aside",
    { class: "side" },
    h(
      "section",
      { class: "card", "aria-labelledby": "sets-h" },
      h(
        "div",
        { class: "sets-head" },
        h("h2", { id: "sets-h", tabindex: -1 }, "Your task sets"),
        setId === undefined ? null : h("a", { href: "#/sets", class: "new-set", id: "new-set" }, "+ New set"),
      ),
      bar.el,
      listNote,
      list,
      pager,
    ),
  );
  // An open set's charts over time go under it, in the same column.
  const column = setId === undefined ? detail : h("div", { class: "detail-col" }, detail, historyCard(ctx, setId));
  root.append(h("div", { class: `layout${setId === undefined ? " no-set" : " has-set"}` }, side, column));

  let sets: TaskSet[] = [];
  let next = "";
  let listFailing = false;
  let drawn = "";
  let seq = 0;
  function drawList(): void {
    const f = filtered(listState.filter);
    listNote.textContent = sets.length > 0 ? "" : f ? "No task set matches." : "None yet: disclose one with the form.";
    listNote.hidden = sets.length > 0;
    const page = listState.tokens.length;
    pageNote.textContent = sets.length === 0 ? "" : `${page > 1 ? `page ${page}, ` : ""}${plural(sets.length, "set")}`;
    newer.hidden = page === 1;
    older.hidden = next === "";
    pager.hidden = newer.hidden && older.hidden;
    // The list is polled every five seconds: draw it again only when it changed.
    const key = sets.map((ts) => `${ts.id}\t${ts.name}\t${ts.state}\t${setLine(ts)}`).join("\n");
    if (key === drawn) return;
    drawn = key;
    replace(list, sets.map((ts) => h("li", null, setLink(ts, setId))));
  }
  async function loadList(): Promise<void> {
    const my = ++seq;
    const token = listState.tokens[listState.tokens.length - 1];
    const req = listRequest(listState.filter, token, PageSize, listState.admin);
    if (typeof req === "string") {
      bar.invalid(req);
      return;
    }
    bar.invalid("");
    try {
      const id = listState.tokens.length === 1 ? idOf(listState.filter.q) : undefined;
      // "#42" is only set 42; a plain "42" is also in names.
      const idOnly = listState.filter.q.trim().startsWith("#") && id !== undefined;
      const [r, byId] = await Promise.all([
        idOnly ? { taskSets: [], nextPageToken: "" } : ctx.clients.tasks.listTaskSets(req, { signal: ctx.signal }),
        // A number is also a set's id: that set comes first, above the names that hold the number.
        id === undefined
          ? undefined
          : ctx.clients.tasks.getTaskSet({ setId: id, pageSize: 1 }, { signal: ctx.signal }).then((g) => g.taskSet, () => undefined),
      ]);
      if (my !== seq) return;
      sets = r.taskSets;
      if (byId) sets = [byId, ...sets.filter((s) => s.id !== byId.id)];
      next = r.nextPageToken;
      drawList();
      if (listFailing) ctx.clearProblem();
      listFailing = false;
    } catch (err) {
      if (my !== seq) return;
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
  newer.addEventListener("click", () => {
    if (listState.tokens.length > 1) listState.tokens.pop();
    void loadList();
  });
  older.addEventListener("click", () => {
    if (next === "") return;
    listState.tokens.push(next);
    void loadList();
  });
  // Admins may filter by owner: ask once who this is, then show the field.
  void ctx.clients.users.whoAmI({}, { signal: ctx.signal }).then(
    (r) => {
      const admin = r.role === "admin";
      if (admin !== listState.admin) {
        listState.admin = admin;
        bar.setAdmin(admin);
      }
    },
    () => undefined,
  );
  void loadList();
  const timer = setInterval(() => void loadList(), 5000);
  ctx.signal.addEventListener("abort", () => clearInterval(timer));

  if (setId === undefined) {
    // No set open: the wide pane shows how things stand, and the form to disclose one.
    const form = discloseForm(ctx);
    const overview = h("div", { id: "overview" });
    replace(detail, h("h2", { id: "detail-h", class: "sr-only" }, "Overview and a new task set"), overview, form.el);
    detail.classList.add("pane-overview");
    mountOverview(overview, ctx, (state) => {
      listState.filter.state = state;
      bar.sync();
      listState.tokens = [""];
      drawn = "";
      void loadList();
    });
    return;
  }
  mountDetail(detail, ctx, setId, (ts) => {
    // The watched set's line in the list follows the stream (once a frame at most).
    const i = sets.findIndex((x) => x.id === ts.id);
    if (i < 0) return;
    sets[i] = ts;
    const a = list.querySelector<HTMLElement>(`a[data-set="${ts.id}"]`);
    if (a && a.dataset.key !== linkKey(ts)) a.replaceWith(setLink(ts, setId));
  });
}

function linkKey(ts: TaskSet): string {
  return `${ts.state}\t${setLine(ts)}`;
}

/** setLink is a set's entry in the list: its name, a badge with its state, and its line. */
function setLink(ts: TaskSet, current: bigint | undefined): HTMLElement {
  const look = setStateLook(ts.state);
  return h(
    "a",
    { href: `#/sets/${ts.id}`, "aria-current": ts.id === current ? "page" : undefined, "data-set": String(ts.id), "data-key": linkKey(ts), "data-state": look.word },
    h(
      "span",
      { class: "set-top" },
      h("span", { class: "set-name" }, ts.name || "(unnamed)"),
      h("span", { class: `set-state set-${look.cls}` }, h("span", { "aria-hidden": "true" }, look.icon), ` ${look.word}`),
    ),
    h("span", { class: "muted set-line" }, setLine(ts)),
  );
}

/** setLine is a set's line in the list: its id, owner, size, and how many tasks finished, failed, are requested and run. */
function setLine(ts: TaskSet): string {
  const c = ts.counts;
  const parts = [`#${ts.id}`];
  if (listState.admin && ts.owner) parts.push(ts.owner);
  if (!c) return parts.join(" · ");
  parts.push(plural(c.total, "task"));
  if (c.finished > 0n) parts.push(`${fmtCount(c.finished)} finished`);
  if (ts.failed > 0n) parts.push(`${fmtCount(ts.failed)} failed`);
  if (c.requested > 0n) parts.push(`${fmtCount(c.requested)} requested`);
  if (c.running > 0n) parts.push(`${fmtCount(c.running)} running`);
  return parts.join(" · ");
}

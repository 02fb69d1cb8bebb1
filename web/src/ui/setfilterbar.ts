// The set list's search box and filters: name or id, state, label, and
// (admins) owner. Typing waits a moment before the list is asked again.

import { StateChoices } from "../setfilter";
import type { SetFilter } from "../setfilter";
import { h } from "./dom";

/** FilterBar is the bar's element and what the list tells it. */
export interface FilterBar {
  el: HTMLElement;
  /** invalid shows why the filter cannot be sent ("" clears it). */
  invalid(message: string): void;
  /** setAdmin shows or hides the owner field. */
  setAdmin(admin: boolean): void;
  /** sync draws the fields again from the filter (changed elsewhere: the overview's links). */
  sync(): void;
}

/** setFilterBar edits f in place and calls changed after each change (typing: after a pause). */
export function setFilterBar(f: SetFilter, admin: boolean, changed: () => void): FilterBar {
  const q = h("input", { id: "sets-q", type: "search", autocomplete: "off", spellcheck: "false", placeholder: "name, glob or #id" });
  const state = h("select", { id: "sets-state" }, StateChoices.map((c) => h("option", { value: c.value }, c.label)));
  const label = h("input", { id: "sets-label", type: "text", autocomplete: "off", spellcheck: "false", placeholder: "KEY=VALUE" });
  const owner = h("input", { id: "sets-owner", type: "text", autocomplete: "off", spellcheck: "false", placeholder: "you; * for everyone" });
  const err = h("p", { class: "field-error", id: "sets-filter-err", hidden: true });
  const ownerTool = h("div", { class: "tool" }, h("label", { for: "sets-owner" }, "Owner"), owner);
  const sync = () => {
    q.value = f.q;
    state.value = f.state;
    label.value = f.label;
    owner.value = f.owner;
  };
  sync();
  ownerTool.hidden = !admin;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const read = (now: boolean) => {
    f.q = q.value;
    f.state = state.value;
    f.label = label.value;
    f.owner = owner.value;
    clearTimeout(timer);
    if (now) changed();
    else timer = setTimeout(changed, 250);
  };
  for (const el of [q, label, owner]) {
    el.addEventListener("input", () => read(false));
    el.addEventListener("keydown", (e: KeyboardEvent) => {
      if (e.key === "Enter") read(true);
    });
  }
  state.addEventListener("change", () => read(true));
  const el = h(
    "div",
    { class: "set-filters", role: "search", "aria-label": "Find task sets" },
    h("div", { class: "tool tool-q" }, h("label", { for: "sets-q" }, "Search"), q),
    h("div", { class: "tool" }, h("label", { for: "sets-state" }, "State"), state),
    h("div", { class: "tool" }, h("label", { for: "sets-label" }, "Label"), label),
    ownerTool,
    err,
  );
  return {
    el,
    invalid(message) {
      err.textContent = message;
      err.hidden = message === "";
      if (message) label.setAttribute("aria-invalid", "true");
      else label.removeAttribute("aria-invalid");
    },
    setAdmin(a) {
      ownerTool.hidden = !a;
    },
    sync,
  };
}

// A tiny DOM builder: h("p", {class: "x", onclick}, "text", child).

import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { fmtClock, fmtClockUTC, tsSeconds } from "../format";

/** Child is anything h() accepts as a child; null, undefined and false are skipped. */
export type Child = Node | string | number | null | undefined | false | Child[];

/** Attrs are attributes; on* functions become listeners, true/false toggle boolean attributes. */
export type Attrs = Record<string, string | number | boolean | null | undefined | ((e: any) => void)>;

function setAttrs(el: Element, attrs: Attrs | null | undefined): void {
  if (!attrs) return;
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (typeof v === "function") el.addEventListener(k.slice(2).toLowerCase(), v);
    else if (v === true) el.setAttribute(k, "");
    else el.setAttribute(k, String(v));
  }
}

/** append adds children to a node. */
export function append(el: Node, ...children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, ...c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

/** h creates an HTML element with attributes and children. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs?: Attrs | null, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, ...children);
  return el;
}

/** s creates an SVG element with attributes and children. */
export function s(tag: string, attrs?: Attrs | null, ...children: Child[]): SVGElement {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  setAttrs(el, attrs);
  append(el, ...children);
  return el;
}

/** replace swaps a node's children for new ones. */
export function replace(el: Element, ...children: Child[]): void {
  el.replaceChildren();
  append(el, ...children);
}

/** byId returns the element with an id, or throws: the page's skeleton is fixed. */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`page skeleton lacks #${id}`);
  return el as T;
}

/**
 * setDisabled marks a button unusable with aria-disabled rather than the
 * disabled property: a disabled button drops the keyboard focus, while an
 * aria-disabled one keeps it and is still announced. Click handlers check
 * isDisabled.
 */
export function setDisabled(el: HTMLElement, on: boolean): void {
  if (on) el.setAttribute("aria-disabled", "true");
  else el.removeAttribute("aria-disabled");
}

/** isDisabled reports whether setDisabled marked el unusable. */
export function isDisabled(el: HTMLElement): boolean {
  return el.getAttribute("aria-disabled") === "true";
}

/** timeAt is a <time> showing ts in the browser's time zone, with the UTC time on hover; "—" when unset. */
export function timeAt(ts: Timestamp | undefined): Node {
  const sec = tsSeconds(ts);
  if (sec === undefined) return document.createTextNode("—");
  return h("time", { datetime: new Date(sec * 1000).toISOString(), title: `UTC ${fmtClockUTC(ts)}` }, fmtClock(ts));
}

// What the parts of one watched set's view (header, table, output, why)
// share: the set's model, whether it loaded, the frame scheduler, and the
// table's drawn rows as the panels below it see them.

import type { Searcher, SetView } from "../../state";
import type { Ctx } from "../context";

/** Dirty says what the next animation frame draws again. */
export interface Dirty {
  /** head: the counts, the stacked bar, the set's actions and the command note. */
  head: boolean;
  /** order: the filtered, sorted order of the rows (and then the rows in view). */
  order: boolean;
  /** rows: rows in view whose tasks changed. */
  rows: boolean;
  /** window: which rows are in view (a scroll, a resize). */
  window: boolean;
}

/** SetCtx is one watched set's shared state; detail.ts makes it and hands it to each part. */
export interface SetCtx {
  readonly ctx: Ctx;
  readonly setId: bigint;
  /** view is the set as the watch stream last said, updated in place. */
  readonly view: SetView;
  /** searcher finds text in the tasks' commands for the table's filter. */
  readonly searcher: Searcher;
  /** loaded says a snapshot arrived. */
  loaded: boolean;
  /** stopped says the watch gave up (not found, no permission): nothing can be done here. */
  stopped: boolean;
  /** dirty is what the next frame will draw; read it, change it only through schedule. */
  readonly dirty: Readonly<Dirty>;
  /** schedule asks for what to be drawn in the next animation frame (one frame at most). */
  schedule(what: Partial<Dirty>): void;
}

/** Rows is what the panels below the table need of its drawn rows. */
export interface Rows {
  /** touch marks task i's row to be drawn again, if it is drawn. */
  touch(i: number | undefined): void;
  /** drawWindow draws the rows in view now. */
  drawWindow(): void;
  /** redrawRow draws task i's row again now, if it is drawn, and returns it. */
  redrawRow(i: number | undefined): HTMLTableRowElement | undefined;
  /** isDrawn says whether task i's row is in the page. */
  isDrawn(i: number): boolean;
  /** waitingInView lists the tasks of the drawn rows that wait for a slot. */
  waitingInView(): number[];
}

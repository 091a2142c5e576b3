// The dashboard's two DOM helpers: an element by id, and a text set only when it changes (so a poll
// that brings the same figures does not re-render them).

export const $ = (id) => document.getElementById(id);

export function setText(id, text) {
  const el = $(id);
  if (el.textContent !== text) el.textContent = text;
}

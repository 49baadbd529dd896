// Element builders: every element is made with createElement / textContent, no HTML is ever
// parsed from data.

const SVG = 'http://www.w3.org/2000/svg';

type ClickHandler = (event: MouseEvent) => void;

/** Attributes set as they are, except `text` (the text content) and `onclick` (a listener). */
export interface Attributes {
  text?: string;
  onclick?: ClickHandler;
  [name: string]: string | ClickHandler | undefined;
}

/** The page's element with this id, of this type (a missing or different element is a bug of the page). */
export const byId = <T extends HTMLElement>(id: string, type: abstract new () => T): T => {
  const element = document.getElementById(id);
  if (!(element instanceof type)) throw new Error(`#${id}: not in the page, or not a ${type.name}`);
  return element;
};

/** An element with text and attributes; children appended. */
export const el = <K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Attributes = {},
  children: ReadonlyArray<Node | string> = [],
): HTMLElementTagNameMap[K] => {
  const element = document.createElement(tag);
  const target: HTMLElement = element; // for addEventListener's 'click' overload (a MouseEvent)
  for (const [name, value] of Object.entries(attributes)) {
    if (name === 'text') element.textContent = typeof value === 'string' ? value : '';
    else if (typeof value === 'function') target.addEventListener('click', value);
    else if (value !== undefined) element.setAttribute(name, value);
  }
  for (const child of children) element.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
  return element;
};

/** An SVG element with attributes. */
export const svg = <K extends keyof SVGElementTagNameMap>(tag: K, attributes: Record<string, string | number>): SVGElementTagNameMap[K] => {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  return element;
};

export const table = (headings: readonly string[], rows: readonly HTMLTableRowElement[]): HTMLTableElement => {
  const head = el(
    'tr',
    {},
    headings.map((text) => el('th', { scope: 'col', text })),
  );
  // Each cell names its column (data-label): a narrow screen shows rows as cards, labelled so.
  for (const row of rows) {
    Array.from(row.children).forEach((child, index) => {
      if (headings[index] !== undefined && !child.hasAttribute('data-label')) child.setAttribute('data-label', headings[index]);
    });
  }
  return el('table', {}, [el('thead', {}, [head]), el('tbody', {}, rows)]);
};

/** A cell; nothing to show is a dash. */
export const cell = (content: Node | string | null | undefined, attributes: Attributes = {}): HTMLTableCellElement =>
  el('td', attributes, [content === null || content === undefined ? '—' : content]);

/** Empties a container and puts this in it. */
export const replaceContent = (target: HTMLElement, content: Node): void => {
  target.textContent = '';
  target.appendChild(content);
};

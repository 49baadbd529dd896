// The choices the lists offer to the other views: the timeline select ("job:<name>",
// "schedule:<id>") and the runs filter's job codes. Choices are only added (a refresh keeps the
// reader's selection).

import { byId, el } from './dom';
import { chooseTimeline, timelineKey } from './timeline-view';

export interface TimelineChoice {
  key: string;
  label: string;
}

const optionValues = (select: HTMLSelectElement): string[] => Array.from(select.options, (option) => option.value);

/** Adds the choices not offered yet; with `pickFirst`, shows the first timeline when none is shown. */
export const offerChoices = (timelineChoices: readonly TimelineChoice[], codes: readonly string[], pickFirst: boolean): void => {
  const select = byId('timeline-job', HTMLSelectElement);
  const codeSelect = byId('runs-code', HTMLSelectElement);
  const knownKeys = optionValues(select);
  const knownCodes = optionValues(codeSelect);
  for (const choice of timelineChoices) {
    if (!knownKeys.includes(choice.key)) select.appendChild(el('option', { value: choice.key, text: choice.label }));
  }
  for (const code of codes) {
    if (!knownCodes.includes(code)) {
      codeSelect.appendChild(el('option', { value: code, text: code }));
      knownCodes.push(code);
    }
  }
  if (pickFirst && !timelineKey() && timelineChoices.length) chooseTimeline(timelineChoices[0].key);
};

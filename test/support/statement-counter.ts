import type { Logger, QueryRunner } from 'typeorm';

/** A TypeORM logger that counts the statements a DataSource sends (and records their text). */
export class StatementCounter implements Logger {
  readonly statements: string[] = [];

  get count(): number {
    return this.statements.length;
  }

  reset(): void {
    this.statements.length = 0;
  }

  logQuery(query: string, _parameters?: unknown[], _queryRunner?: QueryRunner): void {
    this.statements.push(query);
  }

  logQueryError(): void {}
  logQuerySlow(): void {}
  logSchemaBuild(): void {}
  logMigration(): void {}
  log(): void {}
}

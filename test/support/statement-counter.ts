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

/** A StatementCounter that also keeps each statement's parameters (which leases it carried). */
export class StatementLog extends StatementCounter {
  readonly sent: Array<{ text: string; parameters: unknown[] }> = [];

  override logQuery(query: string, parameters?: unknown[]): void {
    super.logQuery(query);
    this.sent.push({ text: query, parameters: parameters ?? [] });
  }
}

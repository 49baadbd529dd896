// ESLint (flat config): typescript-eslint's recommended rules with type information, as Nest's
// own repositories use them, and Prettier owning the layout (eslint-config-prettier turns off
// the rules it decides).
import eslint from '@eslint/js';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/', 'schematics/**/files/**', '**/*.js', '**/*.cjs', '**/*.mjs'] },
  eslint.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // As in Nest's own repositories.
      '@typescript-eslint/no-explicit-any': 'off',
      // An async function that does not await still returns a promise, as the ports it implements ask.
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-floating-promises': 'error',
      // A variable assigned after the closures that read it are made (a test rig) stays let.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // Ports and pending claims are plain objects of functions, called detached on purpose (bound once where they need it).
      '@typescript-eslint/unbound-method': 'off',
      // Error messages name a rejected input as String() gives it, whatever its type.
      '@typescript-eslint/no-base-to-string': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  {
    // The schematics compile with a tsconfig of their own (no jest types).
    files: ['schematics/**/*.ts'],
    languageOptions: { parserOptions: { projectService: false, project: './tsconfig.schematics.json', tsconfigRootDir: import.meta.dirname } },
  },
  {
    // Tests pass methods to expect() and mocks unbound, and read untyped JSON evidence.
    files: ['test/**', 'bench/**', 'examples/**'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      // Tests reject and throw the very reason or error they are handed, to assert on it.
      '@typescript-eslint/prefer-promise-reject-errors': 'off',
      '@typescript-eslint/only-throw-error': 'off',
      // Rows read with DataSource.query are asserted on their type where the test reads them.
      '@typescript-eslint/no-unnecessary-type-assertion': 'off',
      '@typescript-eslint/no-unsafe-enum-comparison': 'off',
    },
  },
  {
    // TypeORM's QueryRunner.query answers any: the migrations type its rows where they read them.
    files: ['migrations/**'],
    rules: { '@typescript-eslint/no-unsafe-assignment': 'off' },
  },
  prettier,
);

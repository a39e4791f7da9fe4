// @ts-check
/**
 * ESLint: JavaScript's and typescript-eslint's recommended rules, the type-aware ones included
 * (`npm run lint`). A rule is turned off only below, with a one-line reason beside it.
 */
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    // compiled output, installed packages, local servers' data, generated files
    ignores: ['build/', 'node_modules/', '.data/', 'tmp/', 'shared/client/dist/', 'shared/client/apiTypes.ts'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
      globals: { ...globals.node },
    },
  },
  {
    // plain JavaScript outside the TypeScript project: the build scripts (Node) and the pages' scripts (browsers)
    files: ['**/*.js', '**/*.mjs'],
    extends: [tseslint.configs.disableTypeChecked],
  },
  {
    files: ['api/checkout/assets/**/*.js', 'shared/cards/sandbox/assets/**/*.js'],
    languageOptions: { sourceType: 'script', globals: { ...globals.browser } },
  },
  {
    files: ['scripts/build.js', 'scripts/lockfile-fix.js'],
    languageOptions: { sourceType: 'commonjs' },
    // plain CommonJS scripts that run before anything is built
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    files: ['**/*.ts'],
    rules: {
      // knex and objection type query results, and JSON.parse and fetch type bodies, as `any`: 4,500 findings
      // (nine in ten in tests reading answers); narrowing them is the data layer's typing, a change of its own
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      // the kernel's kind table holds kinds of different row types (OperationKind<any, any, any>), as objection's generics do
      '@typescript-eslint/no-explicit-any': 'off',
      // objection models declare their columns on an interface of the class's name: the library's documented pattern
      '@typescript-eslint/no-unsafe-declaration-merging': 'off',
      // Node, Koa and knex take functions that return promises where their types say void (createServer(app.callback()),
      // an async listener that catches its own errors, a knex where-callback returning its builder)
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      // an async function without an await keeps the signature of its interface (a connector's call, a route's handler)
      '@typescript-eslint/require-await': 'off',
      // an unused binding that starts with _ is named on purpose (a destructured field left out, an ignored argument)
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          caughtErrorsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
        },
      ],
    },
  },
  {
    // loaded lazily with require(): the tracing SDK and bullmq-otel only when traces are on, the build module from start
    files: ['shared/tracing/register.ts', 'shared/tracing/spans.ts', 'scripts/start.ts'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // structured-headers types itself only through package exports, which the build's CommonJS resolution does not read
    files: ['shared/providers/pawapay/signatures.ts'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // an empty interface merged with its class of the same name types objection models' and SDK errors' fields
    files: ['shared/db/models.ts', 'shared/client/errors.ts'],
    rules: { '@typescript-eslint/no-empty-object-type': 'off' },
  },
  {
    files: ['test/**/*.ts'],
    rules: {
      // chai's property assertions (`expect(x).to.be.true`) are expressions by design
      '@typescript-eslint/no-unused-expressions': 'off',
    },
  },
);

import { runCardSandbox } from './server';

/** Entry point of the sandbox card vault (Procfile `card-vault`), on CARD_VAULT_PORT. */
runCardSandbox('vault');

import { runCardSandbox } from './server';

/** Entry point of the sandbox card acquirer (Procfile `card-acquirer`), on CARD_PROVIDER_PORT. */
runCardSandbox('acquirer');

/** The checkout's words, in French (default) and English (docs/decisions.md "Cards": the page). */

export type Lang = 'fr' | 'en';

export const TEXT = {
  fr: {
    title: 'Paiement',
    reference: 'Référence :',
    payTo: 'Paiement à',
    cardFields: 'Champs de la carte bancaire',
    pay: (amount: string) => `Payer ${amount}`,
    otherLang: 'English',
    charging: 'Paiement en cours… Ne fermez pas cette page.',
    challengeTitle: 'Authentification 3-D Secure',
    challengeIntro: 'Votre banque vous demande de confirmer ce paiement.',
    challengeFrame: 'Page d’authentification de votre banque',
    challengeFallback: 'La page ne s’affiche pas ? Ouvrir la page d’authentification',
    succeeded: 'Paiement réussi',
    succeededText: 'Merci ! Votre paiement a été accepté.',
    failed: 'Paiement refusé',
    'card-declined': 'Votre carte a été refusée. Aucun montant n’a été débité.',
    'authentication-failed': 'L’authentification 3-D Secure a échoué. Aucun montant n’a été débité.',
    failedText: 'Le paiement a échoué. Aucun montant n’a été débité.',
    cancelled: 'Paiement expiré',
    cancelledText: 'Le délai pour payer est dépassé. Aucun montant n’a été débité.',
    refunded: 'Paiement remboursé',
    refundedText: 'Ce paiement a été remboursé.',
    back: (merchant: string) => `Retour chez ${merchant}`,
    redirecting: 'Vous allez être redirigé vers le marchand…',
    notFound: 'Paiement introuvable',
    notFoundText: 'Ce lien de paiement n’existe pas ou n’est plus valide.',
    noChallenge: 'Aucune authentification en cours pour ce paiement.',
    returnToCheckout: 'Revenir au paiement',
    unavailable: 'Le paiement par carte n’est pas disponible pour le moment.',
    messages: {
      'token-invalid': 'Les informations de carte n’ont pas pu être utilisées. Saisissez à nouveau votre carte.',
      'token-expired': 'La saisie de la carte a expiré. Saisissez à nouveau votre carte.',
      'token-used': 'Ces informations de carte ont déjà servi. Saisissez à nouveau votre carte.',
      'token-foreign': 'Ces informations de carte ne valent pas pour ce paiement. Saisissez à nouveau votre carte.',
      card: 'Vérifiez les informations de votre carte.',
      busy: 'Trop de tentatives. Patientez une minute puis réessayez.',
      network: 'Le service ne répond pas. Réessayez.',
      processing: 'Paiement en cours…',
    },
  },
  en: {
    title: 'Payment',
    reference: 'Reference:',
    payTo: 'Payment to',
    cardFields: 'Card details',
    pay: (amount: string) => `Pay ${amount}`,
    otherLang: 'Français',
    charging: 'Payment in progress… Please keep this page open.',
    challengeTitle: '3-D Secure authentication',
    challengeIntro: 'Your bank asks you to confirm this payment.',
    challengeFrame: 'Your bank’s authentication page',
    challengeFallback: 'Page not showing? Open the authentication page',
    succeeded: 'Payment succeeded',
    succeededText: 'Thank you! Your payment was accepted.',
    failed: 'Payment declined',
    'card-declined': 'Your card was declined. Nothing was charged.',
    'authentication-failed': '3-D Secure authentication failed. Nothing was charged.',
    failedText: 'The payment failed. Nothing was charged.',
    cancelled: 'Payment expired',
    cancelledText: 'The time to pay is over. Nothing was charged.',
    refunded: 'Payment refunded',
    refundedText: 'This payment was refunded.',
    back: (merchant: string) => `Back to ${merchant}`,
    redirecting: 'Taking you back to the merchant…',
    notFound: 'Payment not found',
    notFoundText: 'This payment link does not exist or is no longer valid.',
    noChallenge: 'No authentication is under way for this payment.',
    returnToCheckout: 'Back to the payment',
    unavailable: 'Card payment is not available at the moment.',
    messages: {
      'token-invalid': 'Your card details could not be used. Please enter your card again.',
      'token-expired': 'Your card entry has expired. Please enter your card again.',
      'token-used': 'These card details were already used. Please enter your card again.',
      'token-foreign': 'These card details are not valid for this payment. Please enter your card again.',
      card: 'Please check your card details.',
      busy: 'Too many attempts. Please wait a minute and try again.',
      network: 'The service does not answer. Please try again.',
      processing: 'Payment in progress…',
    },
  },
} as const;

/** `?lang=fr|en` first, then the best of French and English in Accept-Language, else French. */
export function pickLang(query: unknown, acceptLanguage: string | undefined): Lang {
  if (query === 'fr' || query === 'en') return query;
  let best: Lang = 'fr';
  let bestQ = 0;
  for (const part of (acceptLanguage ?? '').split(',').slice(0, 20)) {
    const [tag, ...params] = part.trim().toLowerCase().split(';');
    const lang = tag.split('-')[0];
    if (lang !== 'fr' && lang !== 'en') continue;
    const qParam = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const q = qParam ? Number(qParam.slice(2)) : 1;
    if (Number.isFinite(q) && q > bestQ) {
      best = lang;
      bestQ = q;
    }
  }
  return best;
}

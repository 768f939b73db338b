/** The authenticated caller: the business and client its access token names, and the scopes it grants. */
export interface Principal {
  readonly businessId: string;
  readonly clientId: string;
  readonly scopes: ReadonlySet<string>;
}

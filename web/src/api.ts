// The Connect-web clients, with the sign-in token sent by an interceptor.

import { createClient } from "@connectrpc/connect";
import type { Client, Interceptor, Transport } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { BillingService } from "./gen/batch/v1/billing_pb";
import { ClusterService } from "./gen/batch/v1/cluster_pb";
import { TaskSetService } from "./gen/batch/v1/taskset_pb";
import { UserService } from "./gen/batch/v1/user_pb";

/** TokenKey is the sessionStorage key of the sign-in token. */
export const TokenKey = "batchd.token";

/** TokenStore holds the sign-in token; an empty string means none. */
export interface TokenStore {
  get(): string;
  set(token: string): void;
}

/** storageTokenStore keeps the token in a Storage (sessionStorage: gone when the tab closes). */
export function storageTokenStore(s: Pick<Storage, "getItem" | "setItem" | "removeItem">): TokenStore {
  return {
    get: () => s.getItem(TokenKey) ?? "",
    set: (t) => (t === "" ? s.removeItem(TokenKey) : s.setItem(TokenKey, t)),
  };
}

/**
 * authInterceptor sends `Authorization: Bearer TOKEN` on every call while a
 * token is stored, unless the call names its own (sign-in checks a token
 * before storing it).
 */
export function authInterceptor(tokens: TokenStore): Interceptor {
  return (next) => async (req) => {
    const t = tokens.get().trim();
    if (t !== "" && !req.header.has("Authorization")) req.header.set("Authorization", `Bearer ${t}`);
    return await next(req);
  };
}

/** Clients are the services the page calls (of UserService, only WhoAmI). */
export interface Clients {
  tasks: Client<typeof TaskSetService>;
  billing: Client<typeof BillingService>;
  cluster: Client<typeof ClusterService>;
  users: Client<typeof UserService>;
}

/** clientsFor builds the clients on a transport (a router transport in tests). */
export function clientsFor(transport: Transport): Clients {
  return {
    tasks: createClient(TaskSetService, transport),
    billing: createClient(BillingService, transport),
    cluster: createClient(ClusterService, transport),
    users: createClient(UserService, transport),
  };
}

/** browserClients builds the clients for the page: same origin, binary Connect protocol. */
export function browserClients(baseUrl: string, tokens: TokenStore): Clients {
  return clientsFor(
    createConnectTransport({ baseUrl, useBinaryFormat: true, interceptors: [authInterceptor(tokens)] }),
  );
}

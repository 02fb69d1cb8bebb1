// The batchd page: task sets live over Connect-web, the bill and the cluster.

import "./style.css";
import { browserClients, storageTokenStore } from "./api";
import { startApp } from "./ui/app";

const tokens = storageTokenStore(sessionStorage);
startApp(browserClients(location.origin, tokens), tokens);

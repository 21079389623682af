/** A ticket tracker on loopback: POST /tickets creates one (JSON {title}), GET /tickets?title=T lists those with that title. */
export interface Tracker {
    url: string;
    tickets: Array<{
        id: number;
        title: string;
    }>;
    dropNextResponse: boolean;
    close: () => Promise<void>;
}
/** Start the tracker on 127.0.0.1 (any free port). With `dropNextResponse`, the next create happens but its connection is cut before the reply. */
export declare function startTracker(): Promise<Tracker>;
/** Both runs on one mount; returns true when each went as the module comment says. */
export declare function effectsExample(say?: (s: string) => void): Promise<boolean>;

/** Error body schemas of the families, for response documentation. */
import { Type } from 'typebox';

export const StandardError = Type.Object({ error: Type.Object({ code: Type.String(), message: Type.String() }) });
export const SearchError = Type.Object({ error: Type.String(), code: Type.Integer(), details: Type.Union([Type.String(), Type.Null()]) });
export const CasesError = Type.Object({ error: Type.String(), code: Type.String() });
export const NotificationError = Type.Object({ message: Type.String(), error_code: Type.Integer() });
export const ClinicsError = Type.Record(Type.String(), Type.Array(Type.String()));
export const ClinicsNotFound = Type.Object({ status: Type.Literal('error'), message: Type.String() });

/**
 * The name search's query set: patients as a front desk registered them, and what another front
 * desk (or the same one, a year later) types for them. Each query names the patients it must find
 * among the first `within` hits (5 unless said); `absent` lists patients it must not find at all.
 */

export interface QueryPatient {
  ref: string;
  first: string;
  middle?: string;
  last?: string;
  mobile?: string;
}

export interface NameQuery {
  query: string;
  expect: string[];
  within?: number;
  absent?: string[];
  /** What the query tests. */
  why: string;
}

export const PATIENTS: QueryPatient[] = [
  // Hindi belt
  { ref: 'rajesh-sharma', first: 'Rajesh', middle: 'Kumar', last: 'Sharma', mobile: '+919811000001' },
  { ref: 'ramesh-sharma', first: 'Ramesh', last: 'Sharma', mobile: '+919811000001' },
  { ref: 'sunita-sharma', first: 'Sunita', last: 'Sharma', mobile: '+919811000002' },
  { ref: 'shanti-sharma', first: 'Shanti', last: 'Sarma' },
  { ref: 'anita-kumari', first: 'Anita', last: 'Kumari' },
  { ref: 'pooja-gupta', first: 'Pooja', last: 'Gupta' },
  { ref: 'deepak-verma', first: 'Deepak', last: 'Verma' },
  { ref: 'raghvendra-singh', first: 'Raghvendra', middle: 'Pratap', last: 'Singh' },
  { ref: 'krishna-yadav', first: 'Krishna', last: 'Yadav' },
  { ref: 'sudhir-chaudhary', first: 'Sudheer', last: 'Chaudhary' },
  { ref: 'lakshmi-devi', first: 'Laxmi', last: 'Devi' },
  { ref: 'vijay-tiwari', first: 'Vijay', last: 'Tiwari' },
  { ref: 'priyanka-mishra', first: 'Priyanka', last: 'Mishra' },
  // Tamil
  { ref: 'subramanian-iyer', first: 'Subramanian', last: 'Iyer' },
  { ref: 'karthik-raja', first: 'Karthick', last: 'Raja' },
  { ref: 'senthil-kumar', first: 'Senthil', last: 'Kumar' },
  { ref: 'ramasamy-pandian', first: 'Ramasamy', last: 'Pandiyan' },
  { ref: 'meenakshi-sundaram', first: 'Meenakshi', last: 'Sundaram' },
  { ref: 'murugan-k', first: 'K.', last: 'Murugan' },
  { ref: 'lakshmanan-r', first: 'Lakshmanan', last: 'R' },
  // Telugu
  { ref: 'srinivasa-rao', first: 'Srinivasa', last: 'Rao', mobile: '9848000010' },
  { ref: 'venkata-naidu', first: 'Venkata', middle: 'Ramana', last: 'Naidu' },
  { ref: 'venkatesh-reddy', first: 'Venkatesh', last: 'Reddy' },
  { ref: 'sreenivas-goud', first: 'Sreenivas', last: 'Goud' },
  // Bengali
  { ref: 'debashish-mukherjee', first: 'Debashish', last: 'Mukherjee' },
  { ref: 'subhas-bose', first: 'Subhas', last: 'Bose' },
  { ref: 'soumya-chatterjee', first: 'Soumya', last: 'Chatterjee' },
  { ref: 'biswajit-ghosh', first: 'Biswajit', last: 'Ghosh' },
  { ref: 'arindam-choudhury', first: 'Arindam', last: 'Choudhury' },
  { ref: 'bijoy-banerjee', first: 'Bijoy', last: 'Banerjee' },
  // Marathi
  { ref: 'dnyaneshwar-patil', first: 'Dnyaneshwar', last: 'Patil' },
  { ref: 'vaishali-deshpande', first: 'Vaishali', last: 'Deshpande' },
  { ref: 'sachin-jadhav', first: 'Sachin', last: 'Jadhav' },
  { ref: 'ashwini-kulkarni', first: 'Ashwini', last: 'Kulkarni' },
  // Punjabi
  { ref: 'gurpreet-kaur', first: 'Gurpreet', last: 'Kaur' },
  { ref: 'harpreet-singh', first: 'Harpreet', last: 'Singh', mobile: '9815000020' },
  { ref: 'manjeet-dhillon', first: 'Manjeet', last: 'Dhillon' },
  { ref: 'jaspal-sandhu', first: 'Jaspal', last: 'Sandhu' },
  // Muslim
  { ref: 'mohammed-rafiq', first: 'Mohammed', last: 'Rafiq' },
  { ref: 'syed-hussain', first: 'Syed', last: 'Hussain' },
  { ref: 'farooq-shaikh', first: 'Farooq', last: 'Shaikh' },
  { ref: 'abdul-rehman', first: 'Abdul', last: 'Rehman' },
  { ref: 'ayesha-khan', first: 'Ayesha', last: 'Khan' },
  { ref: 'zakir-hussain', first: 'Zakir', last: 'Husain' },
  { ref: 'iqbal-ansari', first: 'Iqbal', last: 'Ansari' },
  // Christian
  { ref: 'joseph-mathew', first: 'Joseph', last: 'Mathew' },
  { ref: 'thomas-varghese', first: 'Thomas', last: 'Varghese' },
  { ref: 'mary-dsouza', first: 'Mary', last: "D'Souza" },
  { ref: 'george-kurian', first: 'George', last: 'Kurian' },
  // Others that share sounds or letters with the above
  { ref: 'sanjay-sharma', first: 'Sanjay', last: 'Sharma' },
  { ref: 'rakesh-kumar', first: 'Rakesh', last: 'Kumar' },
  { ref: 'suresh-raina', first: 'Suresh', last: 'Raina' },
  { ref: 'kavita-rao', first: 'Kavita', last: 'Rao' },
  { ref: 'aishwarya-rai', first: 'Aishwarya', last: 'Rai' },
  { ref: 'baby-of-sunita', first: 'B/O Sunita' },
];

export const QUERIES: NameQuery[] = [
  // Exact and prefix
  { query: 'Rajesh Sharma', expect: ['rajesh-sharma'], why: 'exact, middle name left out' },
  { query: 'sharma', expect: ['rajesh-sharma', 'ramesh-sharma', 'sunita-sharma', 'sanjay-sharma'], within: 6, why: 'surname alone' },
  { query: 'Sunita Shar', expect: ['sunita-sharma'], why: 'surname being typed' },
  { query: 'Sunita Sh', expect: ['sunita-sharma'], why: 'surname being typed, its first two letters no vowel' },
  { query: 'Pri', expect: ['priyanka-mishra'], why: 'first letters' },
  { query: 'Sharma Rajesh', expect: ['rajesh-sharma'], why: 'surname first' },
  { query: 'Mr. Rajesh Kumar Sharma', expect: ['rajesh-sharma'], why: 'honorific' },
  // Initials
  { query: 'R. K. Sharma', expect: ['rajesh-sharma'], absent: ['ramesh-sharma', 'sunita-sharma'], why: 'initials with dots' },
  { query: 'RK Sharma', expect: ['rajesh-sharma'], why: 'initials run together' },
  { query: 'Sharma R K', expect: ['rajesh-sharma'], why: 'initials after the surname' },
  { query: 'R Sharma', expect: ['rajesh-sharma', 'ramesh-sharma'], why: 'one initial, two patients' },
  { query: 'K Murugan', expect: ['murugan-k'], why: 'Tamil initial stored' },
  { query: 'Kumar Murugan', expect: ['murugan-k'], why: 'full name for a stored initial' },
  { query: 'R Lakshmanan', expect: ['lakshmanan-r'], why: 'initial first, stored last' },
  { query: 'V R Naidu', expect: ['venkata-naidu'], why: 'Telugu initials' },
  // Hindi variants
  { query: 'Puja Gupta', expect: ['pooja-gupta'], why: 'oo/u' },
  { query: 'Dipak Varma', expect: ['deepak-verma'], why: 'ee/i, e/a' },
  { query: 'Raghavendra Singh', expect: ['raghvendra-singh'], why: 'schwa written' },
  { query: 'Raghvendra Sing', expect: ['raghvendra-singh'], why: 'Singh without h' },
  { query: 'Krishn Yadav', expect: ['krishna-yadav'], why: 'final a dropped' },
  { query: 'Sudhir Choudhury', expect: ['sudhir-chaudhary'], why: 'ee/i, au/ou, a/u' },
  { query: 'Sudheer Chowdhury', expect: ['sudhir-chaudhary'], why: 'ow' },
  { query: 'Lakshmi Devi', expect: ['lakshmi-devi'], why: 'ksh/x' },
  { query: 'Laxmi', expect: ['lakshmi-devi'], why: 'exact first name' },
  { query: 'Vijai Tiwary', expect: ['vijay-tiwari'], why: 'y/i endings' },
  { query: 'Priyanka Misra', expect: ['priyanka-mishra'], why: 'sh/s' },
  { query: 'Anita Kumari', expect: ['anita-kumari'], why: 'Kumari as a surname stays' },
  { query: 'Kumari Anita', expect: ['anita-kumari'], why: 'Kumari before a name' },
  { query: 'Shanti Sharma', expect: ['shanti-sharma'], why: 'Sarma/Sharma' },
  // Tamil variants
  { query: 'Subramaniam Iyer', expect: ['subramanian-iyer'], why: '-am/-an ending' },
  { query: 'Subrahmanyam', expect: ['subramanian-iyer'], why: 'Sanskrit spelling' },
  { query: 'Karthik Raja', expect: ['karthik-raja'], why: 'ck/k' },
  { query: 'Kartik', expect: ['karthik-raja'], why: 'th/t' },
  { query: 'Sendhil Kumar', expect: ['senthil-kumar'], why: 'Tamil t/d (one typo)' },
  { query: 'Ramaswamy Pandian', expect: ['ramasamy-pandian'], why: 'swamy/samy, iy/i' },
  { query: 'Minakshi Sundaram', expect: ['meenakshi-sundaram'], why: 'ee/i' },
  // Telugu variants
  { query: 'Srinivas Rao', expect: ['srinivasa-rao'], absent: ['sreenivas-goud'], why: 'final a dropped' },
  { query: 'Shrinivas', expect: ['srinivasa-rao', 'sreenivas-goud'], why: 'Shr/Sr' },
  { query: 'Sreenivasa Goud', expect: ['sreenivas-goud'], why: 'ee and final a' },
  { query: 'Venkat Ramana Nayudu', expect: ['venkata-naidu'], why: 'ay/ai, short form being typed' },
  { query: 'Venkatesa Reddy', expect: ['venkatesh-reddy'], why: 'Tamil -sa for -sh' },
  { query: 'Venkatesh Redy', expect: ['venkatesh-reddy'], why: 'double letters' },
  // Bengali variants
  { query: 'Debasish Mukherji', expect: ['debashish-mukherjee'], why: 'sh/s, ee/i' },
  { query: 'Devashish Mukerjee', expect: ['debashish-mukherjee'], why: 'b/v, kh/k' },
  { query: 'Subhash Basu', expect: ['subhas-bose'], why: 'Bose/Basu' },
  { query: 'Soumya Chaterjee', expect: ['soumya-chatterjee'], why: 'double t' },
  { query: 'Biswajit Ghose', expect: ['biswajit-ghosh'], why: 'Ghose/Ghosh' },
  { query: 'Bishwajit Ghosh', expect: ['biswajit-ghosh'], why: 'shw/sw' },
  { query: 'Arindam Chaudhuri', expect: ['arindam-choudhury'], why: 'Chaudhuri' },
  { query: 'Vijoy Banerji', expect: ['bijoy-banerjee'], why: 'b/v, ee/i' },
  // Marathi variants
  { query: 'Gyaneshwar Patil', expect: ['dnyaneshwar-patil'], why: 'Dny/Gy' },
  { query: 'Dnyaneshvar', expect: ['dnyaneshwar-patil'], why: 'w/v' },
  { query: 'Vaishalee Despande', expect: ['vaishali-deshpande'], why: 'ee/i, sh/s' },
  { query: 'Sachin Jadhao', expect: ['sachin-jadhav'], why: 'Jadhao (one typo)' },
  { query: 'Ashvini Kulkarni', expect: ['ashwini-kulkarni'], why: 'w/v' },
  // Punjabi variants
  { query: 'Gurprit Kour', expect: ['gurpreet-kaur'], why: 'ee/i, au/ou' },
  { query: 'Harpreet Sing', expect: ['harpreet-singh'], why: 'Sing' },
  { query: 'Manjit Dhilon', expect: ['manjeet-dhillon'], why: 'ee/i, ll/l' },
  { query: 'Jaspal Sandu', expect: ['jaspal-sandhu'], why: 'dh/d' },
  // Muslim variants
  { query: 'Mohd Rafiq', expect: ['mohammed-rafiq'], why: 'Mohd' },
  { query: 'Md. Rafik', expect: ['mohammed-rafiq'], why: 'Md., q/k' },
  { query: 'Muhammad Rafique', expect: ['mohammed-rafiq'], why: 'Muhammad, que' },
  { query: 'Sayyed Husain', expect: ['syed-hussain'], why: 'Sayyed, single s' },
  { query: 'Farook Sheikh', expect: ['farooq-shaikh'], why: 'q/k, ai/ei' },
  { query: 'Faruk Shaik', expect: ['farooq-shaikh'], why: 'oo/u, kh/k' },
  { query: 'Abdul Rahman', expect: ['abdul-rehman'], why: 'e/a' },
  { query: 'Aisha Khan', expect: ['ayesha-khan'], why: 'Aisha/Ayesha' },
  { query: 'Jakir Hussain', expect: ['zakir-hussain'], why: 'z/j' },
  { query: 'Ekbal Ansari', expect: ['iqbal-ansari'], why: 'Ekbal/Iqbal' },
  // Christian variants
  { query: 'Josef Matthew', expect: ['joseph-mathew'], why: 'ph/f, tth/th' },
  { query: 'Tomas Verghese', expect: ['thomas-varghese'], why: 'th/t, e/a' },
  { query: 'Mary Dsouza', expect: ['mary-dsouza'], why: 'apostrophe' },
  { query: 'Mary D Souza', expect: ['mary-dsouza'], why: 'apostrophe as a space' },
  { query: 'George Kuriyan', expect: ['george-kurian'], why: 'iy/i' },
  // Typos
  { query: 'Rajesh Shrama', expect: ['rajesh-sharma'], why: 'letters swapped' },
  { query: 'Aishvarya Ray', expect: ['aishwarya-rai'], why: 'v/w, ay/ai' },
  { query: 'B/O Sunita', expect: ['baby-of-sunita', 'sunita-sharma'], why: 'baby of' },
];

/** Queries that must not find these patients at all. */
export const NON_MATCHES: NameQuery[] = [
  { query: 'Ramesh Kumar', expect: [], absent: ['rajesh-sharma', 'rakesh-kumar'], why: 'another first name' },
  { query: 'Sunita Gupta', expect: [], absent: ['sunita-sharma', 'pooja-gupta'], why: 'both words must match' },
  { query: 'Mohan', expect: [], absent: ['mohammed-rafiq'], why: 'Mohan is not Mohammed' },
  { query: 'K Sharma', expect: ['rajesh-sharma'], absent: ['ramesh-sharma', 'sunita-sharma'], why: 'an initial that only Rajesh Kumar has' },
  { query: 'Suresh Raina Sharma', expect: [], absent: ['suresh-raina'], why: 'a third word the name lacks' },
];

/**
 * What is wrong with the hits `found` (patient refs, best first) for `q`: an expected patient missing or
 * below its rank, a patient that must not be found found.
 */
export function problemsWith(q: NameQuery, found: string[]): string[] {
  const problems: string[] = [];
  const within = q.within ?? 5;
  for (const ref of q.expect) {
    const rank = found.indexOf(ref) + 1;
    if (rank === 0 || rank > within)
      problems.push(`${q.query}: ${ref} at rank ${rank || 'none'} (want <= ${within}; got ${found.slice(0, 6).join(', ')})`);
  }
  for (const ref of q.absent ?? []) if (found.includes(ref)) problems.push(`${q.query}: ${ref} found (${q.why})`);
  return problems;
}
